"""fee_unexplained: a fee posting that joins no transfer.

A provider that posts fees under a receipt of their own leaves fee legs no notification names;
matching joins each to its transfer (reconciliation.matching.fee_legs) by a fee line naming it
or by holding, unit, a share of the fee and the window. One that joins none is money out of a
holding that nothing explains: never matched, accepted or ignored silently, but this alert,
its evidence naming the transfers it could have belonged to (fee-charging transfers with a leg
on the same holding within the matching window), so a person can match it (`recon match`) or
accept it (`recon accept`). Two equally good transfers are not this alert but ambiguous_match.

A fee posting here is a debit waiting in the backlog past the notification grace (counted from
its postedAt and from when recon read it, as every gap), not an exception, whose receipt no
notification names, and that is either of a journalKind other than the principal's
(`transfer_settlement`) or no larger than the fee of a transfer beside it. A transfer's own
debit whose notification never came is larger than any fee and of the principal's kind, so it
is not called a fee. Clears when the posting is matched or a person decides it.

Reads only the backlog's postings (small: what is waiting), each candidate through the
(holding_id, posted_at) index and the matches' posting index.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from sqlalchemy import and_, exists, or_, select

from foundation import format_money
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import describe_items
from reconciliation.matching.backlog import in_backlog
from reconciliation.matching.sql import shift_seconds
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import matches, notifications, postings, transfers

KIND: Final = "fee_unexplained"
SEVERITY: Final = "medium"
#: The journalKind of a transfer's principal legs (and of every leg under some providers).
PRINCIPAL_KIND: Final = "transfer_settlement"
#: Most candidate transfers listed in one alert's evidence: enough for a person to choose.
MOST_CANDIDATES: Final = 10


class FeeUnexplained(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        cutoff = ctx.ago(ctx.policy.notification_grace_seconds)
        p, n, m, t = postings, notifications, matches, transfers
        leg = postings.alias("transfer_leg")
        window = ctx.policy.match_window_seconds
        beside = and_(
            leg.c.holding_id == p.c.holding_id,
            leg.c.posted_at >= shift_seconds(ctx.session, p.c.posted_at, -window),
            leg.c.posted_at <= shift_seconds(ctx.session, p.c.posted_at, window),
            leg.c.id != p.c.id,
        )
        # Each waiting debit with each fee-charging transfer that has a leg beside it (or
        # none: one row with NULL), in one statement.
        query = (
            select(p.c.id, p.c.kind, p.c.amount_minor, t.c.id, t.c.fee_charged_minor)
            .select_from(
                p.outerjoin(leg, beside)
                .outerjoin(
                    m,
                    and_(
                        m.c.posting_id == leg.c.id,
                        m.c.unmatched_at.is_(None),
                        m.c.transfer_id.is_not(None),
                    ),
                )
                .outerjoin(
                    t,
                    and_(
                        t.c.id == m.c.transfer_id,
                        t.c.currency == p.c.currency,
                        t.c.fee_charged_minor > 0,
                    ),
                )
            )
            .where(
                in_backlog("posting", p.c.id),
                p.c.side == "debit",
                p.c.match_status != EXCEPTION,
                p.c.posted_at <= cutoff,
                p.c.ingested_at <= cutoff,
                ~exists().where(n.c.receipt_ref == p.c.receipt_ref),
                or_(p.c.kind != PRINCIPAL_KIND, t.c.id.is_not(None)),
            )
        )
        fees: dict[int, bool] = {}
        beside_ids: dict[int, set[int]] = defaultdict(set)
        for posting_id, kind, amount, transfer_id, fee in ctx.session.execute(query):
            pid = int(posting_id)
            small = fee is not None and int(amount) <= int(fee)
            fees[pid] = fees.get(pid, False) or kind != PRINCIPAL_KIND or small
            if transfer_id is not None:
                beside_ids[pid].add(int(transfer_id))
        ids = sorted(pid for pid, is_fee in fees.items() if is_fee)
        return self._findings(ctx, ids, beside_ids)

    def _findings(
        self, ctx: DriftContext, ids: list[int], beside: dict[int, set[int]]
    ) -> list[Finding]:
        shown = {pid: sorted(beside[pid])[:MOST_CANDIDATES] for pid in ids}
        described = describe_items(ctx.session, "posting", ids)
        transfers_beside = describe_items(
            ctx.session, "transfer", (t for ts in shown.values() for t in ts)
        )
        found = []
        for pid in ids:
            ev = described[pid]
            candidates: list[Any] = [transfers_beside[t] for t in shown[pid]]
            could = (
                f"; it could be the fee of {len(candidates)} transfer"
                f"{'' if len(candidates) == 1 else 's'} beside it, none of which it fits"
                if candidates
                else "; no transfer charging a fee has a leg beside it"
            )
            subject = (
                f"fee posting of {format_money(int(ev['amountMinor']), ev['currency'])} "
                f"({ev['journalKind']}, receipt {ev['receiptRef']}) joins no transfer"
                f"{could}: match it (recon match) or accept it (recon accept)"
            )
            evidence = {"posting": ev, "candidateTransfers": candidates}
            found.append(self.finding(subject, (ev["journalRef"], ev["lineRef"]), evidence))
        return found


__all__ = ["KIND", "FeeUnexplained"]
