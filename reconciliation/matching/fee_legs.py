"""Rule 5: a fee leg posted under a receipt of its own joins its transfer's group.

A provider may post a transfer's fee legs under a receipt (and journal) of their own, which no
notification names, so rules 1 to 3 leave them over. They still belong to the transfer: its
group must hold them to add up for who pays the fee (reconciliation.drift.transfer_groups).
The evidence, strongest first:

- `fee_receipt`: the transfer's fee lines or evidence name the posting's receipt or line ref
  (`transfer_fee_receipts`, stored by the poller from every shape the lines take);
- `fee_holding_amount_window`: nothing links them, so the posting must be a debit on a holding
  the transfer moved money on (its source for the sender's share, its destination for a
  withholding), in the transfer's unit, for a share of the fee charged its bearer allows,
  posted within `match_window_seconds` of one of the transfer's own legs on that holding (its
  settlement, as the ledger dates it). The whole fee that `sender_pays`/`receiver_pays` fix
  ranks above a part up to the fee that `split` or an unknown bearer allows.

A posting named by a fee line takes only the transfers that name it. Two transfers for one
posting, or two postings for one transfer on one holding, at the best evidence, are an
exception for a person (ambiguous_match), never a guess; only the postings are set aside: the
transfers are matched already by their principal legs and stay so.

Its rows need no suspect flag: each names a transfer that charged a fee, and the group check
reads every new row of such a transfer (reconciliation.drift.mismatches).

Set-based, as every rule: one statement computes the candidates of rule 1's leftovers (the
new postings and the backlog that no notification names, less those rule 3 took), one INSERT
writes the unambiguous ones, and only ambiguities are read back. An incremental pass reads
its few leftovers, each through the (holding_id, posted_at) index and the matches' partial
posting index, never every transfer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Table,
    and_,
    case,
    cast,
    func,
    literal,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import active_row
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.scratch import candidate_table
from reconciliation.matching.sql import shift_seconds
from reconciliation.matching.status import group_ambiguities, mark_items
from reconciliation.matching.transfer_states import settled
from reconciliation.matching.vocabulary import RULE_FEE_RECEIPT, RULE_FEE_WINDOW
from reconciliation.matching.writing import write_chosen
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import (
    holdings,
    matches,
    postings,
    transfer_fee_receipts,
    transfers,
)
from upstream import RECEIVER_PAYS, SENDER_PAYS, SPLIT

#: The side a fee leg takes on the holding that pays it: every share is a debit (a sender's
#: fee debit, a receiver's withholding). A credit is never a fee leg.
FEE_SIDE: Final = "debit"

#: Evidence strength in the candidate table, strongest first: a fee line names the posting;
#: the posting is the whole share its transfer's bearer fixes; it is a part of a fee that a
#: `split` (or an unknown bearer) allows. A posting takes only its strongest candidates, so
#: a sender_pays transfer's fee is not also taken for a part of a split's fee beside it.
NAMED: Final = 1
WHOLE: Final = 2
PART: Final = 3


def _share_fits(p: Table, t: Table, payer: str) -> ColumnElement[Any]:
    """SQL: how well the posting's amount fits a share of the fee charged that the bearer
    allows on the payer's side (the source pays the sender's share, the destination the
    receiver's): WHOLE when the bearer fixes the share and it is exactly that, PART when the
    bearer (`split`, or none known) allows any part up to the fee, NULL when it does not fit."""
    fee = t.c.fee_charged_minor
    bearer = t.c.fee_bearer
    return case(
        (and_(bearer == payer, p.c.amount_minor == fee), WHOLE),
        (
            and_(
                or_(bearer == SPLIT, bearer.is_(None)),
                p.c.amount_minor > 0,
                p.c.amount_minor <= fee,
            ),
            PART,
        ),
        else_=None,
    )


def _waiting_debit(p: Table, leftovers: Table) -> ColumnElement[bool]:
    """SQL: a debit among rule 1's leftovers that rule 3 did not take nor set aside."""
    return and_(
        p.c.id.in_(select(leftovers.c.posting_id)),
        p.c.side == FEE_SIDE,
        p.c.match_status != EXCEPTION,
        ~active_row("posting", p.c.id),
    )


def _any_waiting_debit(session: Session, leftovers: Table) -> bool:
    """Whether any leftover is a debit at all: rule 3's leftovers are mostly credits (inbound
    payments notified without a receipt), and a pass without a debit among them has no fee
    leg to join."""
    p = postings
    probe = select(p.c.id).where(_waiting_debit(p, leftovers)).limit(1)
    return session.execute(probe).first() is not None


def _named(leftovers: Table) -> Any:
    """Leftover postings whose receipt or line ref a transfer's fee names."""
    p, r = postings, transfer_fee_receipts
    return (
        select(
            p.c.id.label("posting_id"),
            r.c.transfer_id.label("transfer_id"),
            literal(NAMED).label("evidence"),
        )
        .select_from(p.join(r, or_(r.c.ref == p.c.receipt_ref, r.c.ref == p.c.line_ref)))
        .where(_waiting_debit(p, leftovers))
    )


def _unlinked(session: Session, leftovers: Table, window_seconds: int) -> Any:
    """Leftover debits beside a leg of a fee-charging transfer on the same holding, in its
    unit, for a share of its fee, within the window of that leg."""
    p, h, t = postings, holdings, transfers
    m = matches.alias("transfer_match")  # matches itself is the active_row check's
    leg = postings.alias("transfer_leg")
    on_source = h.c.holding_ref == t.c.source_holding_ref
    on_dest = h.c.holding_ref == t.c.dest_holding_ref
    source_fit, dest_fit = _share_fits(p, t, SENDER_PAYS), _share_fits(p, t, RECEIVER_PAYS)
    return (
        select(
            p.c.id.label("posting_id"),
            t.c.id.label("transfer_id"),
            case((on_source, source_fit), else_=dest_fit).label("evidence"),
        )
        .select_from(
            p.join(h, h.c.id == p.c.holding_id)
            .join(
                leg,
                and_(
                    leg.c.holding_id == p.c.holding_id,
                    leg.c.posted_at >= shift_seconds(session, p.c.posted_at, -window_seconds),
                    leg.c.posted_at <= shift_seconds(session, p.c.posted_at, window_seconds),
                    leg.c.id != p.c.id,
                ),
            )
            .join(
                m,
                and_(
                    m.c.posting_id == leg.c.id,
                    m.c.unmatched_at.is_(None),
                    m.c.transfer_id.is_not(None),
                ),
            )
            .join(t, t.c.id == m.c.transfer_id)
        )
        .where(
            _waiting_debit(p, leftovers),
            t.c.currency == p.c.currency,
            t.c.fee_charged_minor > 0,
            settled(t),
            or_(
                and_(on_source, source_fit.is_not(None)),
                and_(on_dest, ~on_source, dest_fit.is_not(None)),
            ),
        )
    )


def _candidates(session: Session, leftovers: Table, window_seconds: int) -> Any:
    """Each (posting, transfer) once at its strongest evidence, only at the posting's best
    evidence, with rival counts both ways (per posting; per transfer and holding)."""
    pairs = union_all(_named(leftovers), _unlinked(session, leftovers, window_seconds)).subquery(
        "fee_pairs"
    )
    strongest = (
        select(
            pairs.c.posting_id,
            pairs.c.transfer_id,
            func.min(pairs.c.evidence).label("evidence"),
        )
        .group_by(pairs.c.posting_id, pairs.c.transfer_id)
        .subquery("fee_strongest")
    )
    best = func.min(strongest.c.evidence).over(partition_by=strongest.c.posting_id)
    ranked = select(strongest, best.label("best")).subquery("fee_ranked")
    p = postings
    at_best = (
        select(
            ranked.c.posting_id,
            ranked.c.transfer_id,
            ranked.c.evidence,
            p.c.holding_id,
        )
        .select_from(ranked.join(p, p.c.id == ranked.c.posting_id))
        .where(ranked.c.evidence == ranked.c.best)
        .subquery("fee_at_best")
    )
    return select(
        at_best.c.posting_id,
        at_best.c.transfer_id,
        cast(null(), BigInteger).label("notification_id"),
        at_best.c.evidence,
        func.count().over(partition_by=at_best.c.posting_id).label("rivals"),
        func.count()
        .over(partition_by=(at_best.c.transfer_id, at_best.c.holding_id))
        .label("rivals_other"),
    )


def match_fee_legs(
    session: Session, window_seconds: int, now: datetime, leftovers: Table
) -> MatchTally:
    """Join the leftover fee legs to their transfers; set the doubtful ones aside."""
    tally = MatchTally()
    if not _any_waiting_debit(session, leftovers):
        return tally  # one probe instead of a candidate table: most passes have no fee apart
    query = _candidates(session, leftovers, window_seconds)
    with candidate_table(session, "fee_candidates", query) as cand:
        single = and_(cand.c.rivals == 1, cand.c.rivals_other == 1)
        rule = case((cand.c.evidence == NAMED, RULE_FEE_RECEIPT), else_=RULE_FEE_WINDOW)
        counts = write_chosen(
            session, cand, single, rule=rule, now=now, tally=tally, doubtful=~single
        )
        rows: list[tuple[int, int, int]] = []
        if counts["doubtful"]:
            rows = [
                (int(a), int(b), int(e))
                for a, b, e in session.execute(
                    select(cand.c.posting_id, cand.c.transfer_id, cand.c.evidence).where(~single)
                )
            ]
    for named, rule_name in ((True, RULE_FEE_RECEIPT), (False, RULE_FEE_WINDOW)):
        pairs = [(posting, transfer) for posting, transfer, e in rows if (e == NAMED) == named]
        tally.ambiguities += group_ambiguities(rule_name, "posting", "transfer", pairs)
    # Only the postings wait for a person: their transfers are matched by their own legs.
    mark_items(session, [("posting", posting) for posting, _, _ in rows], EXCEPTION)
    return tally


def fee_rule_rivals(ambiguities: Any) -> set[int]:
    """Transfers a fee leg could belong to, as this pass's fee ambiguities name them."""
    return {
        rival_id
        for a in ambiguities
        if a.rule in (RULE_FEE_RECEIPT, RULE_FEE_WINDOW)
        for kind, rival_id in a.rivals
        if kind == "transfer"
    }
