"""The queue of unmatched items a person should look at, by age, a page at a time.

An item is in the queue when a person must decide it (`match_status` 'exception': an ambiguity
or a manual unmatch), or when passes have seen it and it is still unmatched after the
notification grace (in the match backlog and older than the grace). Each stream is read as two
index-driven selects (the exception index, the backlog's primary key) rather than one OR over
the whole table, so the queue costs the same with a million matched postings behind it.
Pages are keyset pages on (time, id), oldest first: the oldest money waiting is what matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    and_,
    case,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import active_row, backlog
from reconciliation.matching.vocabulary import MONEY_EVENTS
from reconciliation.store.models import EXCEPTION, Holding, Notification, Posting, Transfer

postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]
holdings: Table = Holding.__table__  # type: ignore[assignment]

#: Age buckets in whole days (label, first day, last day or None): the same cut as the
#: reconciliation report's ageing, so the console and the report count alike.
AGE_BUCKETS: Final = (("0-1", 0, 1), ("2-7", 2, 7), ("8-30", 8, 30), ("over 30", 31, None))
#: The streams, in the order the queue shows them.
STREAMS: Final = ("posting", "notification", "transfer")
#: Most items on one page.
PAGE_MAX: Final = 100


class QueueError(Exception):
    """A queue request names a stream, bucket or cursor that does not exist."""


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One unmatched item as the queue lists it."""

    stream: str
    item_id: int
    at: datetime
    holding_ref: str | None
    currency: str | None
    amount_minor: int | None
    reference: str
    is_exception: bool
    age_days: int


@dataclass(frozen=True, slots=True)
class QueuePage:
    """Counts per bucket and stream, and one page of one stream (and bucket)."""

    counts: dict[str, dict[str, int]]
    items: list[QueueItem]
    next_cursor: str | None

    @property
    def total(self) -> int:
        return sum(sum(row.values()) for row in self.counts.values())


def _branches(stream: str, late: datetime) -> list[Select[Any]]:
    table: Table
    at: Any
    extra: ColumnElement[bool]
    """Two selects of (at, id, holding_ref, currency, amount, reference, is_exception)."""
    if stream == "posting":
        p, h = postings, holdings
        base = select(
            p.c.posted_at.label("at"),
            p.c.id,
            h.c.holding_ref,
            p.c.currency,
            p.c.amount_minor,
            p.c.receipt_ref.label("reference"),
            (p.c.match_status == EXCEPTION).label("is_exception"),
        ).join(h, h.c.id == p.c.holding_id)
        table, at, extra = p, p.c.posted_at, true()
    elif stream == "notification":
        n = notifications
        base = select(
            n.c.occurred_at.label("at"),
            n.c.id,
            n.c.holding_ref,
            n.c.currency,
            n.c.amount_minor,
            n.c.event_id.label("reference"),
            (n.c.match_status == EXCEPTION).label("is_exception"),
        )
        table, at, extra = n, n.c.occurred_at, n.c.event_type.in_(MONEY_EVENTS)
    elif stream == "transfer":
        t = transfers
        at = func.coalesce(t.c.requested_at, t.c.created_at)
        base = select(
            at.label("at"),
            t.c.id,
            t.c.source_holding_ref.label("holding_ref"),
            t.c.currency,
            t.c.amount_minor,
            t.c.transfer_ref.label("reference"),
            (t.c.match_status == EXCEPTION).label("is_exception"),
        )
        table, extra = t, t.c.is_terminal == true()
    else:
        raise QueueError(f"stream {stream!r} is not one of {', '.join(STREAMS)}")
    decided = base.where(table.c.match_status == EXCEPTION, extra, ~active_row(stream, table.c.id))
    waiting = base.join(
        backlog, and_(backlog.c.kind == stream, backlog.c.item_id == table.c.id)
    ).where(
        # A manual match takes an item out of the queue at once; the backlog forgets it only at
        # the next pass.
        table.c.match_status != EXCEPTION,
        at <= late,
        extra,
        ~active_row(stream, table.c.id),
    )
    return [decided, waiting]


def _bucket_bounds(label: str, now: datetime) -> tuple[datetime | None, datetime]:
    """(oldest exclusive bound or None, newest inclusive bound) of a bucket's times."""
    for name, first, last in AGE_BUCKETS:
        if name == label:
            newest = now - timedelta(days=first)
            oldest = None if last is None else now - timedelta(days=last + 1)
            return oldest, newest
    raise QueueError(f"age {label!r} is not one of {', '.join(b[0] for b in AGE_BUCKETS)}")


def _parse_cursor(cursor: str | None) -> tuple[datetime, int] | None:
    if not cursor:
        return None
    at_text, _, id_text = cursor.rpartition("/")
    try:
        return datetime.fromisoformat(at_text), int(id_text)
    except ValueError:
        raise QueueError(f"cursor {cursor!r} is not valid: follow the page's own links") from None


def counts(session: Session, now: datetime, grace_seconds: int) -> dict[str, dict[str, int]]:
    """Items per age bucket and stream (every bucket and stream present, zero when empty)."""
    late = now - timedelta(seconds=grace_seconds)
    found = {label: dict.fromkeys(STREAMS, 0) for label, _, _ in AGE_BUCKETS}
    for stream in STREAMS:
        items = union_all(*_branches(stream, late)).subquery()
        bucket = case(
            *[
                (items.c.at > now - timedelta(days=last + 1), literal(label))
                for label, _, last in AGE_BUCKETS
                if last is not None
            ],
            else_=literal(AGE_BUCKETS[-1][0]),
        ).label("bucket")
        for label, count in session.execute(select(bucket, func.count()).group_by(bucket)):
            found[str(label)][stream] = int(count)
    return found


def queue_page(
    session: Session,
    *,
    now: datetime,
    grace_seconds: int,
    stream: str = "posting",
    bucket: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> QueuePage:
    """The counts, and the oldest items of one stream (in one bucket) after `cursor`."""
    size = max(1, min(limit, PAGE_MAX))
    late = now - timedelta(seconds=grace_seconds)
    items = union_all(*_branches(stream, late)).subquery()
    query = select(items).order_by(items.c.at, items.c.id).limit(size + 1)
    if bucket:
        oldest, newest = _bucket_bounds(bucket, now)
        query = query.where(items.c.at <= newest)
        if oldest is not None:
            query = query.where(items.c.at > oldest)
    after = _parse_cursor(cursor)
    if after is not None:
        at, item_id = after
        query = query.where(or_(items.c.at > at, and_(items.c.at == at, items.c.id > item_id)))
    rows = session.execute(query).all()
    more = len(rows) > size
    page = [
        QueueItem(
            stream=stream,
            item_id=int(r.id),
            at=r.at,
            holding_ref=str(r.holding_ref) if r.holding_ref is not None else None,
            currency=r.currency,
            amount_minor=r.amount_minor,
            reference=str(r.reference),
            is_exception=bool(r.is_exception),
            age_days=max(0, (now - r.at).days),
        )
        for r in rows[:size]
    ]
    next_cursor = f"{page[-1].at.isoformat()}/{page[-1].item_id}" if more and page else None
    return QueuePage(counts(session, now, grace_seconds), page, next_cursor)
