"""What a pass must look at again: the backlog of items seen but unmatched, and how it moves.

Each stream (postings, notifications, transfers) has a watermark (matching.frontier): every id
at or below it has been seen by a pass. A pass reads the ids above it and the backlog;
afterwards it moves the watermark to the top it read, puts what it saw and could not match in
the backlog, and takes out of the backlog what is now matched or an exception. So the work of a
pass follows what is new and what is waiting, never the size of the history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import (
    ColumnElement,
    Table,
    and_,
    delete,
    exists,
    insert,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.orm import Session

from reconciliation.matching.frontier import STREAMS, Frontier, watermark_name
from reconciliation.matching.scratch import candidate_table
from reconciliation.matching.vocabulary import MONEY_EVENTS, STATUS_DENIED
from reconciliation.store import watermarks
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import match_backlog as backlog
from reconciliation.store.tables import matches
from reconciliation.store.types import UTCDateTime

__all__ = [
    "STREAMS",
    "TRANSFERLESS",
    "active_row",
    "backlog",
    "in_backlog",
    "seen",
    "settle",
    "watermark_name",
]


#: Backlog kind of a matched notification whose transfer we do not know yet.
TRANSFERLESS: Final = "transferless"


def active_row(stream: str, item_id: ColumnElement[int]) -> ColumnElement[bool]:
    """SQL: an active match row names this item."""
    _, column = STREAMS[stream]
    return exists().where(matches.c[column] == item_id, matches.c.unmatched_at.is_(None))


def in_backlog(kind: str, item_id: ColumnElement[int]) -> ColumnElement[bool]:
    return item_id.in_(select(backlog.c.item_id).where(backlog.c.kind == kind))


def _eligible(stream: str) -> ColumnElement[bool]:
    """SQL: items of the stream that can wait for a counterpart at all."""
    table, _ = STREAMS[stream]
    condition = table.c.match_status != EXCEPTION
    if stream == "notification":
        condition = and_(condition, table.c.event_type.in_(MONEY_EVENTS))
    if stream == "transfer":
        denied = and_(table.c.status == STATUS_DENIED, table.c.is_terminal == true())
        condition = and_(condition, ~denied)
    return condition


def enqueue_residue(
    session: Session, frontier: Frontier, leftovers: Table | None, now: datetime
) -> None:
    """Items new to this pass that no rule could match go to the backlog, in one statement.

    Called after every rule has run, so an item goes to the backlog only if it stays there (no
    item is queued by one rule and taken out by the next). Each stream is read as cheaply as
    it can be:
    - postings: only rule 1's leftovers (no notification names their receipt) can be waiting,
      less the few rule 3 matched; the rest of the new postings are not read at all;
    - notifications and transfers: against every active row (one hash anti-join on a full
      pass, index probes on an incremental one). An item new to this pass may already be named
      by an older row: a rule anchored on postings reads the notifications a receipt names
      whatever the notification frontier, so a notification committed just after an earlier
      pass read its tops can be matched by that pass before any pass "sees" it; a transfer new
      to this pass may have been attached to an older row (matching.transfers.attach_transfers).
    """
    parts = []
    if leftovers is not None and frontier.has_new("posting"):
        lo, hi = frontier.new("posting")
        p, _ = STREAMS["posting"]
        waiting = select(leftovers.c.posting_id).where(leftovers.c.posting_id.between(lo, hi))
        parts.append(
            select(literal("posting").label("kind"), p.c.id.label("item_id")).where(
                p.c.id.in_(waiting), _eligible("posting"), ~active_row("posting", p.c.id)
            )
        )
    if frontier.has_new("notification"):
        lo, hi = frontier.new("notification")
        n, _ = STREAMS["notification"]
        parts.append(
            select(literal("notification").label("kind"), n.c.id.label("item_id")).where(
                n.c.id.between(lo, hi),
                _eligible("notification"),
                ~active_row("notification", n.c.id),
            )
        )
    if frontier.has_new("transfer"):
        lo, hi = frontier.new("transfer")
        t, _ = STREAMS["transfer"]
        parts.append(
            select(literal("transfer").label("kind"), t.c.id.label("item_id")).where(
                t.c.id.between(lo, hi), _eligible("transfer"), ~active_row("transfer", t.c.id)
            )
        )
    if not parts:
        return
    # Computed into a temporary table first: that statement may run in parallel on PostgreSQL,
    # an INSERT ... SELECT never does.
    with candidate_table(session, "residue", union_all(*parts)) as residue:
        stamp = literal(now, UTCDateTime())
        found = select(residue.c.kind, residue.c.item_id, stamp)
        session.execute(insert(backlog).from_select(["kind", "item_id", "queued_at"], found))


def settle(session: Session, frontier: Frontier, leftovers: Table | None, now: datetime) -> None:
    """After matching: the backlog is pruned, new items left over join it, watermarks move.

    The prune runs first, and only for kinds the backlog held when the pass began (it reads
    what earlier passes queued): anything a rule of this pass matched, or that became an
    exception, leaves it. Then what this pass saw and could not match is queued, and each
    stream's watermark moves to the top this pass read, in the same transaction as the matches.
    """
    for stream, (table, _) in STREAMS.items():
        if stream in frontier.waiting:
            session.execute(
                delete(backlog).where(
                    backlog.c.kind == stream,
                    or_(
                        active_row(stream, backlog.c.item_id),
                        exists().where(table.c.id == backlog.c.item_id, ~_eligible(stream)),
                    ),
                )
            )
        if frontier.top[stream] > frontier.seen[stream]:
            watermarks.write(session, watermark_name(stream), frontier.top[stream], now)
    if TRANSFERLESS in frontier.waiting:
        resolved = select(matches.c.notification_id).where(
            matches.c.notification_id == backlog.c.item_id,
            matches.c.unmatched_at.is_(None),
            matches.c.transfer_id.is_not(None),
        )
        session.execute(delete(backlog).where(backlog.c.kind == TRANSFERLESS, exists(resolved)))
    enqueue_residue(session, frontier, leftovers, now)


def seen(session: Session, stream: str, item_id: int) -> bool:
    """Has a pass looked at this item yet?"""
    return item_id <= watermarks.read(session, watermark_name(stream), 0)
