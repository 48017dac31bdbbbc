"""Rules 1 and 2, anchored on postings: a posting's receiptRef names its notification.

Every leg of a journal carries the journal's receiptRef, and so does the notification about it
(a completed transfer's TRANSACTION_COMPLETED, an inbound credit's PAYMENT_RECEIVED). When that
notification also carries a transferRef we know, the row links all three (rule transfer_ref);
otherwise the posting and the notification (rule receipt_ref).

A completed transfer is reported once, on its source holding, yet settles as two legs: both
legs match the one notification. Candidates are ranked: a notification about the posting's own
holding first, one about another holding of the same receipt second. Two candidates at the best
rank is an ambiguity (a second notification for the same money), never a guess.

Anchoring on postings makes the rule exact within a batch: a batch holds a set of postings and
all of their candidate notifications, whatever batch those came from.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    and_,
    case,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session

from reconciliation.matching.outcome import MONEY_SUSPECT, STATUS_SUSPECT, MatchTally
from reconciliation.matching.scratch import candidate_table
from reconciliation.matching.status import count_chosen, group_ambiguities
from reconciliation.matching.transfer_states import settled
from reconciliation.matching.vocabulary import (
    MATCHER,
    POSTED_EVENTS,
    RULE_RECEIPT_REF,
    RULE_TRANSFER_REF,
)
from reconciliation.store.models import EXCEPTION, Holding, Match, Notification, Posting, Transfer
from reconciliation.store.types import UTCDateTime

postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]
holdings: Table = Holding.__table__  # type: ignore[assignment]
matches: Table = Match.__table__  # type: ignore[assignment]


def best_candidates(anchor: ColumnElement[bool]) -> Select[tuple[int, int, int, int, int]]:
    """Per anchored posting: its best-ranked notifications, and how many there are."""
    p, n, t, h = postings, notifications, transfers, holdings
    candidates = (
        select(
            p.c.id.label("posting_id"),
            n.c.id.label("notification_id"),
            t.c.id.label("transfer_id"),
            case((n.c.holding_ref == h.c.holding_ref, 1), else_=2).label("rank"),
            disagreement(p, n, t).label("flags"),
        )
        .select_from(
            p.join(h, h.c.id == p.c.holding_id)
            .join(n, n.c.receipt_ref == p.c.receipt_ref)
            .outerjoin(t, (t.c.transfer_ref == n.c.transfer_ref) & (t.c.match_status != EXCEPTION))
        )
        .where(
            anchor,
            p.c.match_status != EXCEPTION,
            n.c.match_status != EXCEPTION,
            n.c.event_type.in_(POSTED_EVENTS),
        )
        .subquery("candidates")
    )
    ranked = select(
        candidates,
        func.min(candidates.c.rank).over(partition_by=candidates.c.posting_id).label("best"),
    ).subquery("ranked")
    return select(
        ranked.c.posting_id,
        ranked.c.notification_id,
        ranked.c.transfer_id,
        func.count().over(partition_by=ranked.c.posting_id).label("rivals"),
        ranked.c.flags,
    ).where(ranked.c.rank == ranked.c.best)


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
            ),
            MONEY_SUSPECT,
        ),
        else_=0,
    )
    return status + money


def collect_suspects(
    session: Session, cand: Table, tally: MatchTally, also: ColumnElement[bool] | None = None
) -> None:
    """Pairs just matched (`rivals` 1, and `also`) whose flags ask a drift rule to look."""
    chosen = and_(cand.c.rivals == 1, cand.c.flags > 0)
    if also is not None:
        chosen = and_(chosen, also)
    for posting_id, notification_id, flags in session.execute(
        select(cand.c.posting_id, cand.c.notification_id, cand.c.flags).where(chosen)
    ):
        if flags & STATUS_SUSPECT:
            tally.status_suspects.add(int(notification_id))
        if flags & MONEY_SUSPECT:
            tally.money_suspects.add(int(posting_id))


def match_postings_by_receipt(
    session: Session, anchor: ColumnElement[bool], now: datetime
) -> MatchTally:
    """Match the postings `anchor` selects; return rows written and ambiguities."""
    tally = MatchTally()
    with candidate_table(session, "receipt_candidates", best_candidates(anchor)) as cand:
        rule = case((cand.c.transfer_id.is_not(None), RULE_TRANSFER_REF), else_=RULE_RECEIPT_REF)
        chosen = select(
            rule,
            cand.c.posting_id,
            cand.c.transfer_id,
            cand.c.notification_id,
            literal(now, UTCDateTime()),
            literal(MATCHER),
        ).where(cand.c.rivals == 1)
        session.execute(
            insert(matches).from_select(
                [
                    "rule",
                    "posting_id",
                    "transfer_id",
                    "notification_id",
                    "matched_at",
                    "matched_by",
                ],
                chosen,
            )
        )
        tally.rows_by_rule.update(count_chosen(session, rule, cand.c.rivals == 1))
        collect_suspects(session, cand, tally)
        pairs = session.execute(
            select(cand.c.posting_id, cand.c.notification_id).where(cand.c.rivals > 1)
        ).all()
    tally.ambiguities = group_ambiguities(
        RULE_RECEIPT_REF, "posting", "notification", ((int(a), int(b)) for a, b in pairs)
    )
    return tally
