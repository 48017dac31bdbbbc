"""The inbox as operators reach it: pages newest first, lookups, replays, depth per state.

The API (`/deliveries`), the console and the CLI (`recon deliveries`) all go through these;
recording deliveries is `reconciliation.notifications.inbox`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from reconciliation.notifications.inbox import (
    MAX_PAGE_SIZE,
    PENDING,
    QUARANTINED,
    REJECTED,
    STATES,
    stored_delivery_id,
)
from reconciliation.store import watermarks
from reconciliation.store.models import Delivery
from reconciliation.store.types import utcnow


class RejectedBodyError(ValueError):
    """A body a person judged not to be true is not replayed; choosing it is the way back."""


@dataclass(frozen=True, slots=True)
class DeliveryPage:
    """One page of the inbox, newest first; `next_cursor` fetches the next (older) page."""

    items: list[Delivery]
    next_cursor: str | None


#: Largest row id either database holds (a signed 64-bit integer). A larger number in a cursor
#: or a path would overflow the driver's parameter and answer 500 instead of a clear 400.
MAX_ROW_ID: Final = 2**63 - 1


def checked_row_id(row_id: int, what: str = "row id") -> int:
    """`row_id` if a row could have it; a ValueError naming the range otherwise."""
    if not 1 <= row_id <= MAX_ROW_ID:
        raise ValueError(f"{what} {row_id} is out of range: row ids run from 1 to {MAX_ROW_ID}")
    return row_id


def parse_cursor(cursor: str | None) -> int | None:
    """The row id a cursor stands for; a ValueError that says what a cursor looks like."""
    if cursor is None or cursor == "":
        return None
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > len(str(MAX_ROW_ID)):
        raise ValueError(
            f"cursor {cursor[:40]!r} is not valid: pass back the next_cursor of the previous page"
        )
    return checked_row_id(int(cursor), "cursor")


def list_deliveries(
    session: Session,
    *,
    state: str | None = None,
    event_type: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> DeliveryPage:
    """Newest first, filtered by state and event type, paged by row id (stable under inserts)."""
    if state is not None and state not in STATES:
        raise ValueError(f"state {state!r} is not valid: expected one of {', '.join(STATES)}")
    if not 0 < limit <= MAX_PAGE_SIZE:
        raise ValueError(f"limit {limit} is not valid: expected 1 to {MAX_PAGE_SIZE}")
    before = parse_cursor(cursor)
    query = select(Delivery).order_by(Delivery.id.desc()).limit(limit + 1)
    if state is not None:
        query = query.where(Delivery.state == state)
    if event_type is not None:
        query = query.where(Delivery.event_type == event_type)
    if before is not None:
        query = query.where(Delivery.id < before)
    items = list(session.scalars(query))
    more = len(items) > limit
    items = items[:limit]
    return DeliveryPage(items, str(items[-1].id) if more and items else None)


def get_delivery(session: Session, row_id: int) -> Delivery | None:
    """One inbox row by its row id."""
    return session.get(Delivery, row_id)


def find_by_delivery_id(session: Session, delivery_id: str) -> list[Delivery]:
    """Every row under a provider delivery id (more than one only after a body conflict)."""
    return list(
        session.scalars(
            select(Delivery)
            .where(Delivery.delivery_id == stored_delivery_id(delivery_id))
            .order_by(Delivery.id)
        )
    )


def reset_for_replay(session: Session, row_id: int) -> Delivery:
    """Put a delivery back to 'pending' so the processor runs it again from scratch.

    The processor is idempotent (invariant 4, docs/architecture.md), so replaying a processed delivery changes nothing
    it already recorded; replaying a quarantined one is how an operator retries it after a fix.
    """
    delivery = session.get(Delivery, row_id)
    if delivery is None:
        raise LookupError(f"no delivery with row id {row_id}: see `recon deliveries list`")
    if delivery.state == REJECTED:
        raise RejectedBodyError(
            f"row {row_id} was judged not to be the true body of delivery "
            f"{delivery.delivery_id}; it is kept as evidence. If it is the true one after all, "
            f"choose it: recon deliveries choose {row_id}"
        )
    session.execute(
        update(Delivery)
        .where(Delivery.id == row_id)
        .values(state=PENDING, attempts=0, error=None, processed_at=None)
    )
    session.refresh(delivery)
    due_for_resend(session, [row_id])
    return delivery


#: Watermark: the sweep's current round has re-sent every pending delivery up to this id.
RESENT_THROUGH: Final = "sweep.deliveries.resent_through"


def due_for_resend(session: Session, row_ids: Sequence[int]) -> None:
    """Make rows put back to pending due for the sweep again, should their message be lost.

    The sweep re-sends each pending delivery once per round, by id; a row reset below the
    round's mark (a replay by a CLI without a broker, say) would otherwise wait for the next
    round.
    """
    if not row_ids:
        return
    through = watermarks.read(session, RESENT_THROUGH, 0)
    lowest = min(row_ids) - 1
    if lowest < through:
        watermarks.write(session, RESENT_THROUGH, lowest, utcnow())


#: States a bulk replay takes: quarantined rows (after recon learned their shape, or a fix),
#: and pending ones (to re-send those a lost message left behind, without waiting for the sweep).
REPLAYABLE_STATES: Final = (QUARANTINED, PENDING)
#: Most rows one bulk replay takes; a larger backlog takes several calls (each says what is left),
#: so one request never holds a huge transaction or enqueues without bound.
MAX_REPLAY: Final = 5000


@dataclass(frozen=True, slots=True)
class BulkReplay:
    """What `replay_deliveries` reset: the row ids to enqueue, and how many still wait."""

    state: str
    row_ids: list[int]
    remaining: int


def replay_deliveries(session: Session, *, state: str, limit: int = MAX_REPLAY) -> BulkReplay:
    """Put every delivery in `state` back to pending, oldest first, for the processor to read
    again; the caller enqueues the row ids after the commit (the sweep catches any it loses).

    This is how a shape recon has just learned (RECON_PAYLOAD_SHAPES, RECON_PAYLOAD_FIELD_MAP)
    reaches the deliveries quarantined before: each one read is processed and its
    `delivery_not_understood` alert resolves when no row carries it. A second body re-sent
    under a known id (`original` false) is left quarantined: it is a conflict for a person, not
    a shape to learn; replay it by row id if it must run. The processor is idempotent
    (invariant 4, docs/architecture.md), so a row replayed twice changes nothing twice.
    """
    if state not in REPLAYABLE_STATES:
        raise ValueError(
            f"state {state!r} cannot be replayed in bulk: expected one of "
            f"{', '.join(REPLAYABLE_STATES)}"
        )
    if not 0 < limit <= MAX_REPLAY:
        raise ValueError(f"limit {limit} is not valid: expected 1 to {MAX_REPLAY}")
    eligible = (Delivery.state == state, Delivery.original.is_not(False))
    waiting = session.scalar(select(func.count()).select_from(Delivery).where(*eligible)) or 0
    chosen = list(
        session.scalars(select(Delivery.id).where(*eligible).order_by(Delivery.id).limit(limit))
    )
    row_ids = chosen
    if chosen and state == QUARANTINED:
        row_ids = sorted(
            session.scalars(
                update(Delivery)
                .where(Delivery.id.in_(chosen), Delivery.state == QUARANTINED)
                .values(state=PENDING, attempts=0, error=None, processed_at=None)
                .returning(Delivery.id)
            )
        )
    remaining = max(int(waiting) - len(chosen), 0)
    due_for_resend(session, row_ids)
    return BulkReplay(state, row_ids, remaining)


def inbox_depth(session: Session) -> dict[str, int]:
    """Rows waiting (pending) or set aside (quarantined), for the metrics gauge.

    Processed rows are not counted: they grow without bound and a scrape must stay cheap (the
    state index answers this query without reading the table).
    """
    counts = {PENDING: 0, QUARANTINED: 0}
    for state, count in session.execute(
        select(Delivery.state, func.count())
        .where(Delivery.state.in_(list(counts)))
        .group_by(Delivery.state)
    ):
        counts[state] = count
    return counts
