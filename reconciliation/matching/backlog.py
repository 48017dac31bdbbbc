"""What a pass must look at: new ids per stream, and the backlog of items seen but unmatched.

Each stream (postings, notifications, transfers) has a watermark: every id at or below it has
been seen by a pass. A pass reads the ids above it (up to the top it found at its start) and
the backlog; afterwards it moves the watermark to that top, puts what it saw and could not
match in the backlog, and takes out of the backlog what is now matched or an exception. So the
work of a pass follows what is new and what is waiting, never the size of the history.

PostgreSQL hands out ids from a sequence before commit, so a row with a lower id can become
visible after one with a higher id. Before reading, a pass therefore waits (briefly) for the
writing transactions that were running when it read the tops: once they are finished, every id
up to the tops is either visible or never will be, and moving the watermark loses nothing.
SQLite has one writer at a time and numbers rows max + 1, so nothing is ever behind it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import structlog
from sqlalchemy import (
    ColumnElement,
    Table,
    and_,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    true,
    union_all,
)
from sqlalchemy.orm import Session

from reconciliation.matching.vocabulary import MONEY_EVENTS, STATUS_DENIED
from reconciliation.store import watermarks
from reconciliation.store.models import (
    EXCEPTION,
    Match,
    MatchBacklog,
    Notification,
    Posting,
    Transfer,
)
from reconciliation.store.types import UTCDateTime

matches: Table = Match.__table__  # type: ignore[assignment]
backlog: Table = MatchBacklog.__table__  # type: ignore[assignment]

#: Backlog kind of a matched notification whose transfer we do not know yet.
TRANSFERLESS: Final = "transferless"

#: Stream -> (its table, its column in matches).
STREAMS: Final[dict[str, tuple[Table, str]]] = {
    "posting": (Posting.__table__, "posting_id"),  # type: ignore[dict-item]
    "notification": (Notification.__table__, "notification_id"),  # type: ignore[dict-item]
    "transfer": (Transfer.__table__, "transfer_id"),  # type: ignore[dict-item]
}

#: How long a pass waits for writers that were mid-transaction when it started.
WRITER_WAIT_SECONDS: Final = 10.0

log = structlog.get_logger(__name__)


def watermark_name(stream: str) -> str:
    return f"match.seen.{stream}"


@dataclass(frozen=True, slots=True)
class Frontier:
    """Per stream: the highest id seen by earlier passes, and the top this pass goes to."""

    seen: dict[str, int]
    top: dict[str, int]

    def new(self, stream: str) -> tuple[int, int]:
        """The inclusive id range this pass sees for the first time (empty when lo > hi)."""
        return self.seen[stream] + 1, self.top[stream]


def read_frontier(session: Session) -> Frontier:
    """Watermarks and current tops; on PostgreSQL, after in-flight writers have finished."""
    seen = {s: watermarks.read(session, watermark_name(s), 0) for s in STREAMS}
    top = {
        s: int(session.execute(select(func.coalesce(func.max(t.c.id), 0))).scalar_one())
        for s, (t, _) in STREAMS.items()
    }
    if session.get_bind().dialect.name == "postgresql":
        _wait_for_writers(session)
    return Frontier(seen=seen, top={s: max(top[s], seen[s]) for s in STREAMS})


def _wait_for_writers(session: Session) -> None:
    running = [
        str(x)
        for x in session.execute(text("SELECT pg_snapshot_xip(pg_current_snapshot())")).scalars()
    ]
    deadline = time.monotonic() + WRITER_WAIT_SECONDS
    while running:
        running = [
            str(x)
            for x in session.execute(
                text(
                    "SELECT x FROM unnest(CAST(:xids AS text[])) AS x "
                    "WHERE pg_xact_status(CAST(x AS xid8)) = 'in progress'"
                ),
                {"xids": running},
            ).scalars()
        ]
        if not running:
            return
        if time.monotonic() > deadline:
            log.warning("matching.writers_still_running", transactions=len(running))
            return
        time.sleep(0.02)


def active_row(stream: str, item_id: ColumnElement[int]) -> ColumnElement[bool]:
    """SQL: an active match row names this item."""
    _, column = STREAMS[stream]
    return exists().where(matches.c[column] == item_id, matches.c.unmatched_at.is_(None))


def in_backlog(kind: str, item_id: ColumnElement[int]) -> ColumnElement[bool]:
    return item_id.in_(select(backlog.c.item_id).where(backlog.c.kind == kind))


def waiting(stream: str, frontier: Frontier) -> ColumnElement[bool]:
    """SQL: the item is new to this pass or in the backlog (and so may still match)."""
    table, _ = STREAMS[stream]
    lo, hi = frontier.new(stream)
    return or_(table.c.id.between(lo, hi), in_backlog(stream, table.c.id))


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


def enqueue_residue(session: Session, frontier: Frontier, first_row: int, now: datetime) -> None:
    """Items new to this pass that no rule could match go to the backlog, in one statement.

    Called after every rule has run, so an item goes to the backlog only if it stays there (no
    item is queued by one rule and taken out by the next). An item new to this pass can only be
    matched by a row of this pass (id > first_row): it was never seen before, and a person can
    only match an item a pass has seen.

    Proving that a million items are matched costs reading them, so this reads as little as it
    can: this pass's rows once for all three streams (a materialised CTE hashed three times),
    and each stream's new ids once, in one INSERT.
    """
    here = (
        select(matches.c.posting_id, matches.c.transfer_id, matches.c.notification_id)
        .where(matches.c.id > first_row, matches.c.unmatched_at.is_(None))
        .cte("matched_here")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    stamp = literal(now, UTCDateTime())
    parts = []
    for stream, (table, column) in STREAMS.items():
        lo, hi = frontier.new(stream)
        if lo <= hi:
            parts.append(
                select(literal(stream), table.c.id, stamp).where(
                    table.c.id.between(lo, hi),
                    _eligible(stream),
                    ~exists().where(here.c[column] == table.c.id),
                )
            )
    if parts:
        session.execute(
            insert(backlog).from_select(["kind", "item_id", "queued_at"], union_all(*parts))
        )


def settle(session: Session, frontier: Frontier, first_row: int, now: datetime) -> None:
    """After matching: the backlog is pruned, new items left over join it, watermarks move.

    The prune runs first, so it reads only what earlier passes queued: anything a rule of this
    pass matched, or that became an exception, leaves it. Then what this pass saw and could not
    match is queued, and each stream's watermark moves to the top this pass read, in the same
    transaction as the matches.
    """
    for stream, (table, _) in STREAMS.items():
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
    enqueue_residue(session, frontier, first_row, now)
    _settle_transferless(session, first_row, literal(now, UTCDateTime()))


def _settle_transferless(session: Session, first_row: int, stamp: ColumnElement[datetime]) -> None:
    """Matched notifications naming a transfer we do not have: wait for it in the backlog."""
    n: Table = Notification.__table__  # type: ignore[assignment]
    t: Table = Transfer.__table__  # type: ignore[assignment]
    waiting_here = backlog.c.kind == TRANSFERLESS
    resolved = select(matches.c.notification_id).where(
        matches.c.notification_id == backlog.c.item_id,
        matches.c.unmatched_at.is_(None),
        matches.c.transfer_id.is_not(None),
    )
    session.execute(delete(backlog).where(waiting_here, exists(resolved)))
    fresh = (
        select(literal(TRANSFERLESS), matches.c.notification_id, stamp)
        .join(n, n.c.id == matches.c.notification_id)
        .where(
            matches.c.id > first_row,
            matches.c.transfer_id.is_(None),
            matches.c.unmatched_at.is_(None),
            n.c.transfer_ref.is_not(None),
            ~exists().where(t.c.transfer_ref == n.c.transfer_ref),
            ~in_backlog(TRANSFERLESS, matches.c.notification_id),
        )
        .distinct()
    )
    session.execute(insert(backlog).from_select(["kind", "item_id", "queued_at"], fresh))


def seen(session: Session, stream: str, item_id: int) -> bool:
    """Has a pass looked at this item yet?"""
    return item_id <= watermarks.read(session, watermark_name(stream), 0)
