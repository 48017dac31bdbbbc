"""amount_mismatch and unit_mismatch: items matched by reference that disagree on the money.

Rules 1 and 2 match by reference (transferRef, receiptRef), so a notification whose amount was
altered, or a transfer whose legs posted another amount, still matches: the references agree,
the money does not, and that is this alert. Compared per match row (posting against its
notification, posting against its transfer) and reported once per notification or transfer,
whatever the number of legs, so one wrong amount is one alert.

Incremental: matched items never change, so a pass reads only the pairs its matching flagged as
disagreeing (matching computes the flag in the same join that finds them), the pairs it gave a
transfer to, rows no drift phase has checked yet, and the rows its open alerts name (they clear
when a person unmatches them).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from sqlalchemy import Table, or_, select

from foundation.money import format_money
from reconciliation.alerts.changes import Assessment, chunks
from reconciliation.alerts.lifecycle import ACKNOWLEDGED, OPEN, Finding, fingerprint
from reconciliation.drift.base import DriftContext
from reconciliation.drift.evidence import describe
from reconciliation.store.models import Alert, Match, Notification, Posting, Transfer

AMOUNT: Final = "amount_mismatch"
UNIT: Final = "unit_mismatch"
SEVERITY: Final = "high"

matches: Table = Match.__table__  # type: ignore[assignment]
postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]

#: Which side of a row is compared with the posting, and under which evidence key.
COUNTERPARTS: Final = (("notification", notifications), ("transfer", transfers))


def _claimed(kind: str, item: dict[str, Any]) -> str:
    """What one side says, for the subject: its amount with its own currency, or its currency."""
    if kind == UNIT:
        return str(item["currency"])
    return format_money(int(item["amountMinor"]), item["currency"])


class MatchedMoneyMismatch:
    kinds = (AMOUNT, UNIT)

    def assess(self, ctx: DriftContext) -> Assessment:
        rows = self._rows(ctx)
        # (kind, counterpart kind, counterpart id) -> the posting ids that disagree with it
        wrong: dict[tuple[str, str, int], set[int]] = defaultdict(set)
        for row in rows:
            for name, _ in COUNTERPARTS:
                other_id = row[f"{name}_id"]
                if other_id is None:
                    continue
                if (
                    row[f"{name}_currency"] is not None
                    and row[f"{name}_currency"] != row["currency"]
                ):
                    wrong[(UNIT, name, other_id)].add(row["posting_id"])
                elif row[f"{name}_amount"] is not None and row[f"{name}_amount"] != row["amount"]:
                    wrong[(AMOUNT, name, other_id)].add(row["posting_id"])
        items = {(name, other) for _, name, other in wrong}
        items |= {("posting", p) for ids in wrong.values() for p in ids}
        evidence = describe(ctx.session, items)
        found = []
        for (kind, name, other_id), posting_ids in sorted(wrong.items()):
            other = evidence[(name, other_id)]
            legs = [evidence[("posting", p)] for p in sorted(posting_ids)]
            key = other["eventId"] if name == "notification" else other["transferRef"]
            what = "amount" if kind == AMOUNT else "currency"
            found.append(
                Finding(
                    kind=kind,
                    severity=SEVERITY,
                    subject=(
                        f"{name} {key} says {what} {_claimed(kind, other)}, its posting says "
                        f"{', '.join(_claimed(kind, leg) for leg in legs)}"
                    ),
                    fingerprint=fingerprint(kind, name, key),
                    evidence={name: other, "postings": legs},
                )
            )
        return Assessment(kinds=self.kinds, findings=found)

    def _rows(self, ctx: DriftContext) -> list[dict[str, Any]]:
        m, p, n, t = matches, postings, notifications, transfers
        base = (
            select(
                m.c.posting_id,
                p.c.amount_minor.label("amount"),
                p.c.currency.label("currency"),
                m.c.notification_id,
                n.c.amount_minor.label("notification_amount"),
                n.c.currency.label("notification_currency"),
                m.c.transfer_id,
                t.c.amount_minor.label("transfer_amount"),
                t.c.currency.label("transfer_currency"),
            )
            .select_from(
                m.join(p, p.c.id == m.c.posting_id)
                .outerjoin(n, n.c.id == m.c.notification_id)
                .outerjoin(t, t.c.id == m.c.transfer_id)
            )
            .where(
                m.c.unmatched_at.is_(None),
                or_(
                    n.c.amount_minor != p.c.amount_minor,
                    n.c.currency != p.c.currency,
                    t.c.amount_minor != p.c.amount_minor,
                    t.c.currency != p.c.currency,
                ),
            )
        )
        rows = [
            dict(r._mapping)
            for r in ctx.session.execute(
                base.where(m.c.id > ctx.matches_checked, m.c.id <= ctx.matches_top)
            )
        ]
        for batch in chunks(sorted(ctx.matched.money_suspects)):
            rows += [
                dict(r._mapping) for r in ctx.session.execute(base.where(m.c.posting_id.in_(batch)))
            ]
        note_ids, transfer_ids = self._named_by_open_alerts(ctx)
        note_ids |= ctx.matched.attached_notifications
        for batch in chunks(sorted(note_ids)):
            rows += [
                dict(r._mapping)
                for r in ctx.session.execute(base.where(m.c.notification_id.in_(batch)))
            ]
        for batch in chunks(sorted(transfer_ids)):
            rows += [
                dict(r._mapping)
                for r in ctx.session.execute(base.where(m.c.transfer_id.in_(batch)))
            ]
        return rows

    def _named_by_open_alerts(self, ctx: DriftContext) -> tuple[set[int], set[int]]:
        note_ids: set[int] = set()
        transfer_ids: set[int] = set()
        query = select(Alert.evidence).where(
            Alert.kind.in_(self.kinds), Alert.state.in_((OPEN, ACKNOWLEDGED))
        )
        for evidence in ctx.session.scalars(query):
            ev = evidence or {}
            note_id = ev.get("notification", {}).get("notificationId")
            transfer_id = ev.get("transfer", {}).get("transferId")
            if isinstance(note_id, int):
                note_ids.add(note_id)
            if isinstance(transfer_id, int):
                transfer_ids.add(transfer_id)
        return note_ids, transfer_ids
