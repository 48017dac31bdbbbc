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

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, func, literal, or_, select, union_all
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import active_row, in_backlog
from reconciliation.matching.frontier import Frontier
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.receipts import disagreement, transfer_awaited
from reconciliation.matching.scratch import candidate_table
from reconciliation.matching.sql import shift_seconds
from reconciliation.matching.status import group_ambiguities
from reconciliation.matching.vocabulary import EVENT_SIDE, RULE_ACCOUNT_AMOUNT
from reconciliation.matching.writing import write_chosen
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import locators, notifications, postings, transfers


def _pairs(session: Session, window_seconds: int, anchor: Any, leftovers: Table) -> Any:
    """Candidate pairs for the notifications `anchor` selects (no counts yet).

    The postings are rule 1's leftovers: every waiting posting (new, or in the backlog without
    an active row) that is not an exception and that no notification's receiptRef names. So a
    posting needs no check of its own against matches here.
    """
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
            transfer_awaited(n, t).label("awaits"),
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
            p.c.id.in_(select(leftovers.c.posting_id)),
            p.c.match_status != EXCEPTION,
            side_of_event,
        )
    )


def _candidates(
    session: Session, frontier: Frontier, window_seconds: int, leftovers: Table
) -> Any | None:
    """Every candidate pair with its rival counts both ways.

    New and backlog notifications are two statements joined by UNION ALL rather than one OR, so
    each side is read through its own index instead of a scan of the whole table. A new
    notification without a receipt cannot have an active row yet (rules 1 and 2 match only
    notifications with a receipt or failures, and a person only what a pass has seen), so only
    the backlog's are checked against matches.
    """
    lo, hi = frontier.new("notification")
    n = notifications
    anchors: list[ColumnElement[bool]] = []
    if lo <= hi:
        anchors.append(n.c.id.between(lo, hi))
    if "notification" in frontier.waiting:
        anchors.append(in_backlog("notification", n.c.id) & ~active_row("notification", n.c.id))
    if not anchors:
        return None
    pairs = union_all(
        *(_pairs(session, window_seconds, anchor, leftovers) for anchor in anchors)
    ).subquery("pairs")
    return select(
        pairs.c.notification_id,
        pairs.c.posting_id,
        pairs.c.transfer_id,
        func.count().over(partition_by=pairs.c.notification_id).label("rivals"),
        func.count().over(partition_by=pairs.c.posting_id).label("rivals_other"),
        pairs.c.flags,
        pairs.c.awaits,
    )


def match_by_account(
    session: Session,
    frontier: Frontier,
    window_seconds: int,
    now: datetime,
    leftovers: Table,
) -> MatchTally:
    """Match waiting notifications without a receipt to rule 1's leftover postings by account,
    amount and window."""
    tally = MatchTally()
    query = _candidates(session, frontier, window_seconds, leftovers)
    if query is None:
        return tally
    with candidate_table(session, "account_candidates", query) as cand:
        single = and_(cand.c.rivals == 1, cand.c.rivals_other == 1)
        counts = write_chosen(
            session,
            cand,
            single,
            rule=literal(RULE_ACCOUNT_AMOUNT),
            now=now,
            tally=tally,
            doubtful=~single,
        )
        rows: Sequence[Any] = []
        if counts["doubtful"]:
            rows = session.execute(
                select(
                    cand.c.notification_id, cand.c.posting_id, cand.c.rivals, cand.c.rivals_other
                ).where(~single)
            ).all()
    by_notification = [(int(n), int(p)) for n, p, per_n, _ in rows if per_n > 1]
    by_posting = [(int(p), int(n)) for n, p, _, per_p in rows if per_p > 1]
    tally.ambiguities = group_ambiguities(
        RULE_ACCOUNT_AMOUNT, "notification", "posting", by_notification
    ) + group_ambiguities(RULE_ACCOUNT_AMOUNT, "posting", "notification", by_posting)
    return tally
