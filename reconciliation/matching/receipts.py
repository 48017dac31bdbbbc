"""Rules 1 and 2, anchored on postings: a posting's receiptRef names its notification.

Every leg of a journal carries the journal's receiptRef, and so does the notification about it
(a completed transfer's TRANSACTION_COMPLETED, an inbound credit's PAYMENT_RECEIVED). When that
notification also carries a transferRef we know, the row links all three (rule transfer_ref);
otherwise the posting and the notification (rule receipt_ref).

A completed transfer is reported once, on its source holding, yet settles as two legs: both
legs match the one notification. Candidates are ranked: a notification about the posting's own
holding first, one about another holding of the same receipt second. Two candidates at the best
rank is an ambiguity (a second notification for the same money), never a guess.

Anchoring on postings makes the rule exact: the anchored postings (new ids and the backlog, in
one statement) come with every candidate notification, whatever pass brought it in. A posting
no notification names comes out of the same join with none, and is kept aside for rule 3
(POSTING_LEFTOVERS), so no later statement reads the new postings again to find it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    and_,
    case,
    exists,
    func,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import Session

from reconciliation.matching.outcome import MONEY_SUSPECT, STATUS_SUSPECT, MatchTally
from reconciliation.matching.scratch import candidate_table, keep_rows
from reconciliation.matching.status import group_ambiguities
from reconciliation.matching.transfer_states import settled
from reconciliation.matching.vocabulary import POSTED_EVENTS, RULE_RECEIPT_REF, RULE_TRANSFER_REF
from reconciliation.matching.writing import write_chosen
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import holdings, notifications, postings, transfers

#: The temporary table of anchored postings no notification names: rule 3's only postings,
#: and the postings' share of what joins the backlog (matching.backlog.settle). It lives
#: until the end of the run (matching.run), inside its transaction.
POSTING_LEFTOVERS: Final = "posting_leftovers"


def _candidate(n: Any, receipt: ColumnElement[Any]) -> ColumnElement[bool]:
    """SQL: notification `n` is a candidate for a posting with this receipt."""
    return and_(
        n.c.receipt_ref == receipt,
        n.c.match_status != EXCEPTION,
        n.c.event_type.in_(POSTED_EVENTS),
    )


def _pairs(anchor: ColumnElement[bool]) -> Select[Any]:
    """Every anchored posting with each notification of its receipt (none: one row, NULLs).

    `doubtful` says another notification is a candidate for the same receipt (a second outer
    join, hashed like the first): only then do ranks and rival counts matter (`ranked`).
    Counting rivals for every posting took a sort of every candidate pair by posting, which
    at 1M postings cost more than the join itself, for the few receipts with two
    notifications.
    """
    p, n, t = postings, notifications, transfers
    rival = notifications.alias("rival")
    return (
        select(
            p.c.id.label("posting_id"),
            n.c.id.label("notification_id"),
            t.c.id.label("transfer_id"),
            disagreement(p, n, t).label("flags"),
            transfer_awaited(n, t).label("awaits"),
            case((rival.c.id.is_not(None), 1), else_=0).label("doubtful"),
        )
        .select_from(
            p.outerjoin(n, _candidate(n, p.c.receipt_ref))
            .outerjoin(t, (t.c.transfer_ref == n.c.transfer_ref) & (t.c.match_status != EXCEPTION))
            .outerjoin(rival, and_(_candidate(rival, n.c.receipt_ref), rival.c.id != n.c.id))
        )
        .where(anchor, p.c.match_status != EXCEPTION)
    )


def candidates(anchors: Sequence[ColumnElement[bool]]) -> Any:
    """Every anchored posting with its candidates; `anchors` select disjoint sets of postings
    (new ids, the backlog), one branch each of a UNION ALL, each read through its own index."""
    return union_all(*(_pairs(anchor) for anchor in anchors))


def ranked(cand: Table) -> Select[Any]:
    """The doubtful postings of `cand`: their best-ranked notifications, and how many.

    Ranks: a notification about the posting's own holding first, one about another holding of
    the same receipt second; two candidates at the best rank is an ambiguity. Read for the
    doubtful rows only, by primary key.
    """
    p, n, h = postings, notifications, holdings
    doubted = (
        select(
            cand.c.posting_id,
            cand.c.notification_id,
            cand.c.transfer_id,
            case((n.c.holding_ref == h.c.holding_ref, 1), else_=2).label("rank"),
            cand.c.flags,
            cand.c.awaits,
        )
        .select_from(
            cand.join(p, p.c.id == cand.c.posting_id)
            .join(h, h.c.id == p.c.holding_id)
            .join(n, n.c.id == cand.c.notification_id)
        )
        .where(cand.c.doubtful == 1)
        .distinct()
        .subquery("doubted")
    )
    best = func.min(doubted.c.rank).over(partition_by=doubted.c.posting_id).label("best")
    at_best = select(doubted, best).subquery("at_best")
    return select(
        at_best.c.posting_id,
        at_best.c.notification_id,
        at_best.c.transfer_id,
        func.count().over(partition_by=at_best.c.posting_id).label("rivals"),
        at_best.c.flags,
        at_best.c.awaits,
    ).where(at_best.c.rank == at_best.c.best)


def transfer_awaited(n: Table, t: Table) -> ColumnElement[int]:
    """SQL 1 when the notification names a transfer we do not know at all (0 otherwise).

    Its match row then waits in the backlog as 'transferless' until the transfer arrives. The
    check runs only for rows the outer join left without a transfer, through the unique
    transfer_ref index (a transfer that exists but is an exception is known: nothing waits).
    """
    known = transfers.alias("known")
    unknown = ~exists().where(known.c.transfer_ref == n.c.transfer_ref)
    return case((and_(n.c.transfer_ref.is_not(None), t.c.id.is_(None), unknown), 1), else_=0)


def disagreement(p: Table, n: Table, t: Table) -> ColumnElement[int]:
    """SQL flags of a candidate pair whose references agree but whose stories may not."""
    # A transfer the gateway has answered for and not called settled (by isTerminal and
    # isSuccessful, whatever the status is named) may contradict the posting's story.
    answered = t.c.id.is_not(None) & t.c.status.is_not(None)
    status = case((answered & ~settled(t), STATUS_SUSPECT), else_=0)
    money = case(
        (
            or_(
                n.c.amount_minor != p.c.amount_minor,
                n.c.currency != p.c.currency,
                t.c.amount_minor != p.c.amount_minor,
                t.c.currency != p.c.currency,
                # A fee's legs do not each carry the amount: drift adds the group up.
                t.c.fee_charged_minor != 0,
            ),
            MONEY_SUSPECT,
        ),
        else_=0,
    )
    return status + money


def _rule(cand: Table) -> ColumnElement[str]:
    return case((cand.c.transfer_id.is_not(None), RULE_TRANSFER_REF), else_=RULE_RECEIPT_REF)


def match_postings_by_receipt(
    session: Session, anchors: Sequence[ColumnElement[bool]], now: datetime
) -> tuple[MatchTally, Table | None]:
    """Match the postings `anchors` select; return what was written and found, and the
    postings no notification names (a temporary table; None when there are none)."""
    tally = MatchTally()
    leftovers = None
    pairs: list[tuple[int, int]] = []
    with candidate_table(session, "receipt_candidates", candidates(anchors)) as cand:
        named = cand.c.notification_id.is_not(None)
        counts = write_chosen(
            session,
            cand,
            and_(named, cand.c.doubtful == 0),
            rule=_rule(cand),
            now=now,
            tally=tally,
            unnamed=~named,
            doubtful=and_(named, cand.c.doubtful == 1),
        )
        if counts["unnamed"]:
            leftovers = keep_rows(
                session, POSTING_LEFTOVERS, select(cand.c.posting_id).where(~named)
            )
        if counts["doubtful"]:
            with candidate_table(session, "receipt_rivals", ranked(cand)) as rivals:
                write_chosen(
                    session, rivals, rivals.c.rivals == 1, rule=_rule(rivals), now=now, tally=tally
                )
                doubts = select(rivals.c.posting_id, rivals.c.notification_id).where(
                    rivals.c.rivals > 1
                )
                pairs = [(int(a), int(b)) for a, b in session.execute(doubts)]
    tally.ambiguities = group_ambiguities(RULE_RECEIPT_REF, "posting", "notification", pairs)
    return tally, leftovers
