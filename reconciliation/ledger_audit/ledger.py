"""Both sides of one holding's ledger, as the audit compares them.

The gateway's side is a fresh read with `upstream.activity_walk.ActivityReader` from an empty
position: oldest first from the start where the provider serves that direction (as the poller
learned it, from the `activity_cursors` rows), else a newest-first walk from the top to the end.
The reader is handed copies of what the pollers learned and nothing it learns is written back:
the live cursors are never read for a position and never moved.

The store's side is the holding's stored postings, and the *horizon*: how far the poller has
read. A posting the gateway shows beyond the horizon is not missing, only not polled yet; one
at or behind it that the store lacks is missing (the provider added it behind the cursor, or
it was lost). The horizon is read before the postings, so a page the poller stores meanwhile
can only make the store look ahead of it, never behind.

Retention may remove reconciled postings (RECON_RETAIN_POSTINGS_DAYS). It records, per holding,
the newest `postedAt` it removed (`PRUNED_THROUGH`); at or before that moment the store holds
only what retention had to keep, so a posting the gateway shows there and the store lacks was
pruned (it is in the prune archive, when one was kept), and is counted as such, not as missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.store import watermarks
from reconciliation.store.models import ActivityCursor, Posting
from upstream import OLDEST_FIRST, ActivityPage, ActivityReader, PagingTerms, ReadPosition
from upstream import ActivityCursor as WireCursor

#: `fetch(cursor, page_size, direction)`: one activity request (the gateway client's).
Fetch = Callable[[WireCursor | None, int, str], ActivityPage]

#: The fields compared, in the order evidence lists them.
FIELDS = (
    "receipt_ref",
    "posted_at",
    "side",
    "effect",
    "kind",
    "amount_minor",
    "currency",
    "partition",
    "normal_side",
)

#: (journal_ref, line_ref): a posting's identity, on both sides.
Key = tuple[UUID, UUID]

#: Watermark per holding: the newest postedAt retention removed, in microseconds since the
#: epoch (reconciliation.retention writes it; see the module docstring).
PRUNED_THROUGH: Final = "retention.postings.pruned_through_us."

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def pruned_through_name(holding_id: int) -> str:
    """The watermark holding how far retention has removed this holding's postings."""
    return f"{PRUNED_THROUGH}{holding_id}"


def to_micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def read_pruned_through(session: Session, holding_id: int) -> datetime | None:
    """The newest postedAt retention removed from this holding; None when it removed none."""
    micros = watermarks.read(session, pruned_through_name(holding_id), -1)
    return None if micros < 0 else _EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True, slots=True)
class Line:
    """One posting as compared: its place in the ledger's order and the fields that matter."""

    posted_at: datetime
    values: tuple[Any, ...]

    def order_key(self, line_ref: UUID) -> tuple[datetime, UUID, UUID]:
        """(postedAt, receiptRef, lineRef): the gateway's total order."""
        return (self.posted_at, self.values[0], line_ref)


@dataclass(frozen=True, slots=True)
class Horizon:
    """How far the poller has read: a position (oldest first) or a completed walk's top."""

    position: tuple[datetime, UUID, UUID] | None = None
    walk_top: datetime | None = None
    #: The newest postedAt retention removed from this holding (None: it removed none).
    pruned_through: datetime | None = None

    def covers(self, line_ref: UUID, line: Line) -> bool:
        """Whether the poller has read past this posting (so the store must have it)."""
        if self.position is not None:
            return line.order_key(line_ref) <= self.position
        if self.walk_top is not None:
            return line.posted_at <= self.walk_top
        return False

    def pruned(self, line: Line) -> bool:
        """Whether retention may have removed this posting from the store (see the docstring)."""
        return self.pruned_through is not None and line.posted_at <= self.pruned_through


def read_horizon(session: Session, holding_id: int) -> Horizon:
    """The poller's horizon for a holding, from its cursor row (only read, never written), and
    how far retention has removed its postings."""
    pruned = read_pruned_through(session, holding_id)
    row = session.execute(
        select(
            ActivityCursor.after_posted_at,
            ActivityCursor.after_receipt_ref,
            ActivityCursor.after_line_ref,
            ActivityCursor.sort_direction,
            ActivityCursor.high_water_posted_at,
        ).where(ActivityCursor.holding_id == holding_id)
    ).first()
    position, walk_top = None, None
    if row is not None:
        posted, receipt, line, direction, high_water = row
        if direction == OLDEST_FIRST and posted and receipt and line:
            position = (datetime.fromisoformat(posted), UUID(receipt), UUID(line))
        elif high_water:
            walk_top = datetime.fromisoformat(high_water)
    return Horizon(position=position, walk_top=walk_top, pruned_through=pruned)


def stored_lines(
    session: Session, holding_id: int, since: datetime | None
) -> Iterator[tuple[Key, Line]]:
    """The holding's stored postings (from `since`), streamed."""
    p = Posting
    fields = (getattr(p, name) for name in FIELDS)  # the columns are named as the fields
    query = select(p.journal_ref, p.line_ref, *fields).where(p.holding_id == holding_id)
    if since is not None:
        query = query.where(p.posted_at >= since)
    for row in session.execute(query.execution_options(yield_per=5_000)):
        journal, line_ref, *values = row
        yield (journal, line_ref), Line(posted_at=values[1], values=tuple(values))


def gateway_lines(
    fetch: Fetch, terms: PagingTerms, since: datetime | None
) -> Iterator[tuple[Key, Line]]:
    """The gateway's postings of one holding (from `since`), read afresh, page by page.

    With `since`, a newest-first walk that stops below it (the spec's own direction, served by
    every provider) reads only the recent part; without it, the whole ledger in the direction
    the provider accepts.
    """
    position = ReadPosition(high_water=since.isoformat()) if since is not None else ReadPosition()
    reader = ActivityReader(fetch, position, terms)
    while True:
        step = reader.read_page()
        for e in step.page.entries:
            if since is not None and e.posted_at < since:
                continue
            values = (
                e.receipt_ref,
                e.posted_at,
                e.posting_side,
                e.balance_effect,
                e.journal_kind,
                e.amount_minor_units,
                str(e.value_unit),
                e.ledger_partition,
                e.ledger_normal_side,
            )
            yield (e.journal_ref, e.line_ref), Line(posted_at=e.posted_at, values=values)
        if step.done:
            return
