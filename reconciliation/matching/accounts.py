"""Rule 3: account number -> locator -> holding, with amount, unit and a time window.

For notifications that carry no receiptRef (a provider that only sends the account number and
the amount): the posting must be on a holding addressed by that account number, on the side the
event speaks of, for the same amount in minor units and the same currency, posted within
`match_window_seconds` of when the notification says it happened, and not matched yet.

This is the weakest rule, so it is strict about doubt in both directions: a notification with
several such postings, or a posting wanted by several notifications, is an ambiguity. To see
every rival at once it runs as one statement over everything waiting (new and backlog), which
after rules 1 and 2 is the small residue of notifications without a receipt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, func, insert, literal, or_, select, union_all
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import Frontier, active_row, in_backlog, waiting
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.receipts import collect_suspects, disagreement
from reconciliation.matching.scratch import candidate_table
from reconciliation.matching.sql import shift_seconds
from reconciliation.matching.status import count_chosen, group_ambiguities
from reconciliation.matching.vocabulary import EVENT_SIDE, MATCHER, RULE_ACCOUNT_AMOUNT
from reconciliation.store.models import EXCEPTION, Locator, Match, Notification, Posting, Transfer
from reconciliation.store.types import UTCDateTime

postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]
locators: Table = Locator.__table__  # type: ignore[assignment]
matches: Table = Match.__table__  # type: ignore[assignment]


def _pairs(session: Session, frontier: Frontier, window_seconds: int, anchor: Any) -> Any:
    """Candidate pairs for the notifications `anchor` selects (no counts yet)."""
    p, n, t, loc = postings, notifications, transfers, locators
    side_of_event = or_(
        *(and_(n.c.event_type == event, p.c.side == side) for event, side in EVENT_SIDE.items())
    )
    return (
        select(
            n.c.id.label("notification_id"),
            p.c.id.label("posting_id"),
            t.c.id.label("transfer_id"),
            disagreement(p, n, t).label("flags"),
        )
        .select_from(
            n.join(loc, loc.c.account_number == n.c.account_number)
            .join(
                p,
                and_(
                    p.c.holding_id == loc.c.holding_id,
                    p.c.amount_minor == n.c.amount_minor,
                    p.c.currency == n.c.currency,
                    p.c.posted_at >= shift_seconds(session, n.c.occurred_at, -window_seconds),
                    p.c.posted_at <= shift_seconds(session, n.c.occurred_at, window_seconds),
                ),
            )
            .outerjoin(t, and_(t.c.transfer_ref == n.c.transfer_ref, t.c.match_status != EXCEPTION))
        )
        .where(
            anchor,
            n.c.receipt_ref.is_(None),
            n.c.event_type.in_(tuple(EVENT_SIDE)),
            n.c.match_status != EXCEPTION,
            ~active_row("notification", n.c.id),
            waiting("posting", frontier),
            p.c.match_status != EXCEPTION,
            ~active_row("posting", p.c.id),
            side_of_event,
        )
    )


def _candidates(session: Session, frontier: Frontier, window_seconds: int) -> Any:
    """Every candidate pair with its rival counts both ways.

    New and backlog notifications are two statements joined by UNION ALL rather than one OR, so
    each side is read through its own index instead of a scan of the whole table.
    """
    lo, hi = frontier.new("notification")
    n = notifications
    pairs = union_all(
        _pairs(session, frontier, window_seconds, n.c.id.between(lo, hi)),
        _pairs(session, frontier, window_seconds, in_backlog("notification", n.c.id)),
    ).subquery("pairs")
    return select(
        pairs.c.notification_id,
        pairs.c.posting_id,
        pairs.c.transfer_id,
        func.count().over(partition_by=pairs.c.notification_id).label("rivals"),
        func.count().over(partition_by=pairs.c.posting_id).label("rivals_other"),
        pairs.c.flags,
    )


def match_by_account(
    session: Session, frontier: Frontier, window_seconds: int, now: datetime
) -> MatchTally:
    """Match waiting notifications without a receipt to postings by account, amount, window."""
    tally = MatchTally()
    query = _candidates(session, frontier, window_seconds)
    with candidate_table(session, "account_candidates", query) as cand:
        chosen = select(
            literal(RULE_ACCOUNT_AMOUNT),
            cand.c.posting_id,
            cand.c.transfer_id,
            cand.c.notification_id,
            literal(now, UTCDateTime()),
            literal(MATCHER),
        ).where(cand.c.rivals == 1, cand.c.rivals_other == 1)
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
        tally.rows_by_rule.update(
            count_chosen(
                session,
                literal(RULE_ACCOUNT_AMOUNT),
                (cand.c.rivals == 1) & (cand.c.rivals_other == 1),
            )
        )
        collect_suspects(session, cand, tally, also=cand.c.rivals_other == 1)
        rows = session.execute(
            select(
                cand.c.notification_id, cand.c.posting_id, cand.c.rivals, cand.c.rivals_other
            ).where(or_(cand.c.rivals > 1, cand.c.rivals_other > 1))
        ).all()
    by_notification = [(int(n), int(p)) for n, p, per_n, _ in rows if per_n > 1]
    by_posting = [(int(p), int(n)) for n, p, _, per_p in rows if per_p > 1]
    tally.ambiguities = group_ambiguities(
        RULE_ACCOUNT_AMOUNT, "notification", "posting", by_notification
    ) + group_ambiguities(RULE_ACCOUNT_AMOUNT, "posting", "notification", by_posting)
    return tally
