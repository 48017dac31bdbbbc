"""amount_mismatch and unit_mismatch: items matched by reference that disagree on the money.

Rules 1 and 2 match by reference (transferRef, receiptRef), so a notification whose amount was
altered, or a transfer whose legs posted another amount, still matches: the references agree,
the money does not, and that is this alert.

- A credit's posting is compared with its notification (PAYMENT_RECEIVED), one to one.
- A transfer's legs are not compared one by one: every leg sharing its receiptRef (principal,
  fee debits, a receiver's withholding) is in its group, and the group must add up for who pays
  the fee (reconciliation.drift.transfer_groups). A group that does not is one alert on the
  transfer whose evidence lists every leg; a fee leg is never compared with the amount. A
  completed-transfer notification is compared with its transfer's amount, and, when recon does
  not know the transfer, stands in for it (its amount, its holding as the source).
- Units are compared leg by leg with the notification and the transfer: amounts of different
  units are never added, so a leg in another unit is unit_mismatch, never part of a sum.

Reported once per notification or transfer, whatever the number of legs, so one wrong amount is
one alert.

Incremental: matched items never change, so a pass reads only the pairs its matching flagged as
disagreeing (matching computes the flag in the same join that finds them, and flags every leg
of a transfer that charged a fee), the pairs it gave a transfer to, rows no drift phase has
checked yet, the rows its open alerts name (they clear when a person unmatches them), and
the groups of transfers whose fee a status read changed since a pass last added them up (legs
matched while the fee was unknown are judged again once it is known).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from sqlalchemy import Select, and_, bindparam, or_, select, update

from foundation import format_money
from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding, fingerprint
from reconciliation.drift.base import DriftContext, named_by_active_alerts
from reconciliation.drift.evidence import describe, natural_key
from reconciliation.drift.transfer_groups import (
    GroupLeg,
    TransferGroup,
    check,
    describe_verdict,
    subject_of,
)
from reconciliation.matching.fee_legs import fee_rule_rivals
from reconciliation.matching.vocabulary import TRANSACTION_COMPLETED
from reconciliation.store.in_lists import chunks
from reconciliation.store.tables import holdings, matches, notifications, postings, transfers

AMOUNT: Final = "amount_mismatch"
UNIT: Final = "unit_mismatch"
SEVERITY: Final = "high"


#: The sides of a row compared with the posting, each its evidence key.
COUNTERPARTS: Final = ("notification", "transfer")


def _claimed(kind: str, item: dict[str, Any]) -> str:
    """What one side says, for the subject: its amount with its own currency, or its currency."""
    if kind == UNIT:
        return str(item["currency"])
    return format_money(int(item["amountMinor"]), item["currency"])


def _finding(kind: str, subject: str, key: tuple[str, Any], evidence: dict[str, Any]) -> Finding:
    return Finding(kind, SEVERITY, subject, fingerprint(kind, *key), evidence)


def group_of(row: dict[str, Any]) -> tuple[str, int] | None:
    """The group a matched row belongs to: its transfer, else its completed-transfer
    notification; None for a credit's row (compared one to one)."""
    if row["transfer_id"] is not None:
        return ("transfer", int(row["transfer_id"]))
    if row["notification_id"] is not None and row["event_type"] == TRANSACTION_COMPLETED:
        return ("notification", int(row["notification_id"]))
    return None


class MatchedMoneyMismatch:
    kinds = (AMOUNT, UNIT)

    def assess(self, ctx: DriftContext) -> Assessment:
        rows = self._rows(ctx)
        # (kind, counterpart kind, counterpart id) -> the posting ids that disagree with it
        wrong: dict[tuple[str, str, int], set[int]] = defaultdict(set)
        groups: set[tuple[str, int]] = set()
        for row in rows:
            group = group_of(row)
            if group is not None:
                groups.add(group)
            for name in COUNTERPARTS:
                other_id, unit, amount = (row[f"{name}_{c}"] for c in ("id", "currency", "amount"))
                if other_id is None:
                    continue
                if unit is not None and unit != row["currency"]:
                    wrong[(UNIT, name, other_id)].add(row["posting_id"])
                elif group is None and amount is not None and amount != row["amount_minor"]:
                    wrong[(AMOUNT, name, other_id)].add(row["posting_id"])
        items = {(name, other) for _, name, other in wrong}
        items |= {("posting", p) for ids in wrong.values() for p in ids}
        evidence = describe(ctx.session, items)
        found = []
        for (kind, name, other_id), posting_ids in sorted(wrong.items()):
            other = evidence[(name, other_id)]
            legs = [evidence[("posting", p)] for p in sorted(posting_ids)]
            key = natural_key(name, other)
            what = "amount" if kind == AMOUNT else "currency"
            subject = (
                f"{name} {key} says {what} {_claimed(kind, other)}, its posting says "
                f"{', '.join(_claimed(kind, leg) for leg in legs)}"
            )
            found.append(_finding(kind, subject, (name, key), {name: other, "postings": legs}))
        groups |= {("transfer", t) for t in _fee_changed(ctx)}
        found += group_findings(ctx, groups)
        return Assessment(kinds=self.kinds, findings=found)

    def _rows(self, ctx: DriftContext) -> list[dict[str, Any]]:
        m, p, n, t = matches, postings, notifications, transfers
        base = _matched(n.c.event_type).where(
            or_(
                n.c.amount_minor != p.c.amount_minor,
                n.c.currency != p.c.currency,
                t.c.amount_minor != p.c.amount_minor,
                t.c.currency != p.c.currency,
                t.c.fee_charged_minor != 0,
            )
        )
        note_ids, transfer_ids = named_by_active_alerts(
            ctx.session, self.kinds, "notification", "transfer"
        )
        scopes = [and_(m.c.id > ctx.matches_checked, m.c.id <= ctx.matches_top)]
        for column, ids in (
            (m.c.posting_id, ctx.matched.money_suspects),
            (m.c.notification_id, note_ids | ctx.matched.attached_notifications),
            (m.c.transfer_id, transfer_ids),
        ):
            scopes += [column.in_(batch) for batch in chunks(sorted(ids))]
        return [
            dict(r._mapping) for scope in scopes for r in ctx.session.execute(base.where(scope))
        ]


def _matched(*more: Any) -> Select[Any]:
    """Active matches with each side's money (the posting's, its notification's, its
    transfer's), and `more` columns of them."""
    m, p, n, t = matches, postings, notifications, transfers
    return (
        select(
            m.c.posting_id,
            m.c.notification_id,
            m.c.transfer_id,
            p.c.amount_minor,
            p.c.currency,
            n.c.amount_minor.label("notification_amount"),
            n.c.currency.label("notification_currency"),
            t.c.amount_minor.label("transfer_amount"),
            t.c.currency.label("transfer_currency"),
            *more,
        )
        .select_from(
            m.join(p, p.c.id == m.c.posting_id)
            .outerjoin(n, n.c.id == m.c.notification_id)
            .outerjoin(t, t.c.id == m.c.transfer_id)
        )
        .where(m.c.unmatched_at.is_(None))
    )


def _fee_changed(ctx: DriftContext) -> list[int]:
    """The transfers whose fee changed since a pass last added up their legs, marked checked.

    Each is marked at the revision read, not the current one: a status read committed after
    this pass's snapshot leaves the pair unequal for the next pass. A transfer with no matched
    leg yet is marked too: its legs, once matched, are new pairs that a pass checks anyway.
    """
    t = transfers
    changed = ctx.session.execute(
        # Read through ix_transfers_fee_unchecked: only transfers whose fee changed.
        select(t.c.id, t.c.fee_revision).where(t.c.fee_revision != t.c.fee_checked_revision)
    ).all()
    if changed:
        ctx.session.execute(
            update(t)
            .where(t.c.id == bindparam("transfer_id"))
            .values(fee_checked_revision=bindparam("read_revision")),
            [{"transfer_id": row.id, "read_revision": row.fee_revision} for row in changed],
        )
    return [int(row.id) for row in changed]


def _load_groups(
    ctx: DriftContext, keys: set[tuple[str, int]]
) -> dict[tuple[str, int], tuple[TransferGroup, dict[str, Any]]]:
    """Each group with every leg matched to it, and the notification that names it (if any)."""
    m, p, n, t, h = matches, postings, notifications, transfers, holdings
    query = _matched(
        h.c.holding_ref,
        p.c.side,
        t.c.source_holding_ref,
        t.c.dest_holding_ref,
        t.c.fee_charged_minor,
        t.c.fee_bearer,
        t.c.fee_evidence,
        n.c.holding_ref.label("notification_holding_ref"),
    ).join(h, h.c.id == p.c.holding_id)
    found: dict[tuple[str, int], tuple[TransferGroup, dict[str, Any]]] = {}
    seen: set[tuple[tuple[str, int], int]] = set()
    for name, column in (("transfer", m.c.transfer_id), ("notification", m.c.notification_id)):
        wanted = sorted(i for kind, i in keys if kind == name)
        for batch in chunks(wanted):
            for row in ctx.session.execute(query.where(column.in_(batch))):
                r = row._mapping
                key = (name, int(r[f"{name}_id"]))
                if (key, int(r["posting_id"])) in seen:
                    continue
                seen.add((key, int(r["posting_id"])))
                if key not in found:
                    group = _new_group(r)
                    if group is None:
                        continue
                    found[key] = (group, dict(r))
                found[key][0].legs.append(
                    GroupLeg(
                        posting_id=int(r["posting_id"]),
                        holding_ref=str(r["holding_ref"]),
                        side=str(r["side"]),
                        amount_minor=int(r["amount_minor"]),
                        currency=str(r["currency"]),
                    )
                )
    return found


def _new_group(r: Any) -> TransferGroup | None:
    """A group's terms from its first row: the transfer's, else its notification's."""
    amount = r["transfer_amount"]
    currency = r["transfer_currency"]
    source = r["source_holding_ref"]
    if amount is None:
        amount, currency = r["notification_amount"], r["notification_currency"]
    if source is None:
        source = r["notification_holding_ref"]
    if amount is None:
        return None  # nothing says what the transfer moved: nothing to add up to
    dest = r["dest_holding_ref"]
    fee = r["fee_charged_minor"]
    if fee is None and r["transfer_id"] is not None:
        # A transfer nothing has ever stated a fee for (no fee object read, no instruction
        # sent) moved its amount and nothing more, as every transfer did before fees; a fee
        # not read yet, or read but not understood, stays unknown.
        fee = 0 if r["fee_bearer"] is None and r["fee_evidence"] is None else None
    return TransferGroup(
        amount_minor=int(amount),
        currency=currency,
        source_ref=str(source) if source is not None else None,
        dest_ref=str(dest) if dest is not None else None,
        fee_minor=fee,
        bearer=r["fee_bearer"],
    )


def group_findings(ctx: DriftContext, keys: set[tuple[str, int]]) -> list[Finding]:
    """amount_mismatch for each group that does not add up for its bearer and fee, and for
    each completed-transfer notification whose amount is not its transfer's."""
    # A transfer a doubtful fee leg could belong to waits for a person's choice (the
    # ambiguous_match alert): its group lacks that leg until then, one cause, one alert.
    awaiting_choice = fee_rule_rivals(ctx.ambiguities)
    loaded = _load_groups(
        ctx, {k for k in keys if not (k[0] == "transfer" and k[1] in awaiting_choice)}
    )
    failing: list[tuple[tuple[str, int], TransferGroup, Any]] = []
    notes: list[tuple[int, int]] = []
    for key, (group, first) in loaded.items():
        verdict = check(group)
        if verdict is not None:
            failing.append((key, group, verdict))
        n_amount, t_amount = first["notification_amount"], first["transfer_amount"]
        if (
            key[0] == "transfer"
            and first["notification_id"] is not None
            and n_amount is not None
            and t_amount is not None
            and n_amount != t_amount
            and first["notification_currency"] == first["transfer_currency"]
        ):
            notes.append((int(first["notification_id"]), key[1]))
    items = {key for key, _, _ in failing} | {("notification", a) for a, _ in notes}
    items |= {("transfer", b) for _, b in notes}
    items |= {("posting", leg.posting_id) for _, g, _ in failing for leg in g.legs}
    evidence = describe(ctx.session, items)
    found = []
    for key, group, verdict in failing:
        item = evidence[key]
        label = (
            f"transfer {item['transferRef']}"
            if key[0] == "transfer"
            else f"the transfer notified by {item['eventId']}"
        )
        found.append(
            _finding(
                AMOUNT,
                subject_of(label, group, verdict),
                (key[0], natural_key(key[0], item)),
                {
                    key[0]: item,
                    "postings": [evidence[("posting", leg.posting_id)] for leg in group.legs],
                    "group": describe_verdict(group, verdict),
                },
            )
        )
    for note_id, transfer_id in notes:
        note, moved = evidence[("notification", note_id)], evidence[("transfer", transfer_id)]
        subject = (
            f"notification {note['eventId']} says amount {_claimed(AMOUNT, note)}, its "
            f"transfer says {_claimed(AMOUNT, moved)}"
        )
        key = ("notification", note["eventId"])
        found.append(_finding(AMOUNT, subject, key, {"notification": note, "transfer": moved}))
    return found
