"""The exceptions a person should look at, by stream and age, a page at a time.

What an exception is belongs to the report (`reconciliation.reports.items.classified`, prose in
docs/reports.md): this module evaluates that very select, over the window "from the beginning
until now", so the console and `recon report` count the same items. What it adds is *which rows
it asks about*, so the cost follows the unmatched items and not the history behind them.

Every pass leaves each item it has seen matched, in the match backlog, or marked 'exception'
(`reconciliation.matching.backlog`); a manual unmatch marks what it leaves alone. So an item
that is not matched is in one of three index-driven branches, disjoint by construction:

- marked: `match_status = 'exception'` (the `(match_status, id)` index; postings keep only the
  exceptions' ids, `ix_postings_exception_id`);
- waiting in the backlog: the backlog's primary key, ids at or below the stream's watermark;
- new: ids above the watermark, which no pass has seen yet (a range of the primary key).

The report's state expression (with its probe of `matches`) then runs on those rows only.

Each probe is a few index pages, so a page must not probe without limit when thousands of items
are stuck: counts stop after `COUNT_CAP` candidate rows per stream and then say "at least"; the
list walks candidates in id order (the order recon stored them, which is the order they
arrived), at most `SCAN_CAP` per request, and continues from where it stopped. The full,
uncapped figures are the report's (the console's downloads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    and_,
    func,
    literal,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import Session

from foundation import excerpt, row_id
from reconciliation.matching.backlog import STREAMS as STREAM_TABLES
from reconciliation.matching.backlog import backlog, watermark_name
from reconciliation.reports.items import FINALITY_SECONDS, age_bucket, classified, why_open
from reconciliation.reports.model import AGEING_BUCKETS, EXCEPTION, ReportWindow
from reconciliation.store import watermarks
from reconciliation.store.models import EXCEPTION as MARKED_EXCEPTION

#: Age buckets in whole days (label, first day, last day or None): the report's own ageing.
AGE_BUCKETS: Final = AGEING_BUCKETS
#: The streams, in the order the queue shows them.
STREAMS: Final = ("posting", "notification", "transfer")
#: Most items on one page.
PAGE_MAX: Final = 100
#: Candidate rows one stream's count looks at before it says "at least": each costs an index
#: probe of the item and one of `matches` (5,000 took ~40 ms a stream on the 2-core bench
#: machine, twice that when it was loaded), so three streams stay well inside the console's
#: 200 ms with room for the list and the rest of the page. A healthy store has far fewer
#: exceptions; more than this is an incident either way, and the download counts them all.
COUNT_CAP: Final = 1_000
#: Candidate rows of each branch one page of the list looks at before it stops and offers to
#: continue (a bucket with few exceptions among many other candidates).
SCAN_CAP: Final = 500


class QueueError(Exception):
    """A queue request names a stream, bucket or cursor that does not exist."""


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One exception as the queue lists it."""

    stream: str
    item_id: int
    at: datetime
    holding_ref: str | None
    currency: str | None
    amount_minor: int | None
    reference: str
    is_exception: bool
    age_days: int
    why: str


@dataclass(slots=True)
class QueueCounts:
    """Exceptions per age bucket and stream; a stream in `partial` was counted up to the cap."""

    by_bucket: dict[str, dict[str, int]]
    partial: set[str] = field(default_factory=set)

    @property
    def total(self) -> int:
        return sum(sum(row.values()) for row in self.by_bucket.values())

    @property
    def complete(self) -> bool:
        return not self.partial


@dataclass(frozen=True, slots=True)
class QueuePage:
    """Counts per bucket and stream, and one page of one stream (and bucket)."""

    counts: QueueCounts
    items: list[QueueItem]
    next_cursor: str | None

    @property
    def total(self) -> int:
        return self.counts.total


def _branches(
    session: Session,
    stream: str,
    now: datetime,
    grace_seconds: int,
    after: int = 0,
    finality_seconds: int = FINALITY_SECONDS,
) -> list[Select[Any]]:
    """The report's classified rows of `stream` in its three unmatched branches (disjoint),
    ids above `after` (said to the backlog too: PostgreSQL carries equalities across a join,
    not ranges)."""
    if stream not in STREAMS:
        raise QueueError(f"stream {stream!r} is not one of {', '.join(STREAMS)}")
    table: Table = STREAM_TABLES[stream][0]
    seen = watermarks.read(session, watermark_name(stream), 0)
    window = ReportWindow(until=now)

    def branch(condition: ColumnElement[bool]) -> Select[Any]:
        found = classified(stream, window, None, grace_seconds, finality_seconds)
        return found.where(condition, table.c.id > after)

    marked = branch(table.c.match_status == MARKED_EXCEPTION)
    waiting = branch(and_(table.c.match_status != MARKED_EXCEPTION, table.c.id <= seen)).join(
        backlog,
        and_(backlog.c.kind == stream, backlog.c.item_id == table.c.id, backlog.c.item_id > after),
    )
    new = branch(and_(table.c.match_status != MARKED_EXCEPTION, table.c.id > seen))
    return [marked, waiting, new]


def counts(
    session: Session,
    now: datetime,
    grace_seconds: int,
    *,
    cap: int = COUNT_CAP,
    finality_seconds: int = FINALITY_SECONDS,
) -> QueueCounts:
    """Exceptions per age bucket and stream (every bucket and stream present, zero when empty),
    among the first `cap` candidates of each stream."""
    found = QueueCounts({label: dict.fromkeys(STREAMS, 0) for label, _, _ in AGE_BUCKETS})
    for stream in STREAMS:
        branches = union_all(
            *_branches(session, stream, now, grace_seconds, finality_seconds=finality_seconds)
        )
        looked = branches.limit(cap).subquery()
        bucket = age_bucket(looked.c.at, now).label("bucket")
        late = func.count().filter(looked.c.state == EXCEPTION)
        rows = session.execute(select(bucket, func.count(), late).group_by(bucket)).all()
        if sum(int(n) for _, n, _ in rows) >= cap:
            found.partial.add(stream)
        for label, _, late in rows:
            found.by_bucket[str(label)][stream] = int(late or 0)
    return found


def _bucket_bounds(label: str, now: datetime) -> tuple[datetime | None, datetime]:
    """(oldest exclusive bound or None, newest inclusive bound) of a bucket's times."""
    for name, first, last in AGE_BUCKETS:
        if name == label:
            newest = now - timedelta(days=first)
            oldest = None if last is None else now - timedelta(days=last + 1)
            return oldest, newest
    raise QueueError(f"age {label!r} is not one of {', '.join(b[0] for b in AGE_BUCKETS)}")


def _parse_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        return row_id(cursor, what="cursor")
    except ValueError:
        raise QueueError(
            f"cursor {excerpt(cursor)} is not valid: follow the page's own links"
        ) from None


@dataclass(frozen=True, slots=True)
class _Walk:
    """One branch's part of a page: the exceptions it found, and how far it is known."""

    rows: list[Any]
    known_through: int | None  # every id of the branch up to here was looked at; None: all


def _walk(
    session: Session,
    branch: Select[Any],
    wanted_more: int,
    bucket: str | None,
    now: datetime,
    scan_cap: int,
) -> _Walk:
    """Up to `scan_cap` candidates of one branch, in id order: the exceptions among them (at
    most `wanted_more` + 1), and how far the branch is known."""
    walked = branch.order_by(branch.selected_columns.item_id).limit(scan_cap).subquery()
    step = func.row_number().over(order_by=walked.c.item_id).label("step")
    wanted: ColumnElement[bool] = walked.c.state == EXCEPTION
    if bucket:
        oldest, newest = _bucket_bounds(bucket, now)
        wanted = and_(wanted, walked.c.at <= newest)
        if oldest is not None:
            wanted = and_(wanted, walked.c.at > oldest)
    numbered = select(walked, step, wanted.label("wanted")).subquery()
    rows = session.execute(
        select(numbered)
        .where(or_(numbered.c.wanted, numbered.c.step == literal(scan_cap)))
        .order_by(numbered.c.item_id)
        .limit(wanted_more + 1)
    ).all()
    found = [r for r in rows if r.wanted]
    if len(found) > wanted_more:
        return _Walk(found, int(found[-1].item_id))
    if rows and rows[-1].step == scan_cap:
        return _Walk(found, int(rows[-1].item_id))
    return _Walk(found, None)


def queue_page(
    session: Session,
    *,
    now: datetime,
    grace_seconds: int,
    stream: str = "posting",
    bucket: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
    scan_cap: int = SCAN_CAP,
    count_cap: int = COUNT_CAP,
    finality_seconds: int = FINALITY_SECONDS,
) -> QueuePage:
    """The counts, and the next exceptions of one stream (in one bucket) after `cursor`.

    Each branch is walked on its own in id order (an index order, so PostgreSQL stops early),
    at most `scan_cap` candidates. The page is what every branch has looked at: ids up to the
    smallest point a branch is known through, so nothing is skipped and the next page starts
    right after it.
    """
    size = max(1, min(limit, PAGE_MAX))
    after = _parse_cursor(cursor)
    if bucket:
        _bucket_bounds(bucket, now)  # refuse an unknown bucket before reading anything
    walks = [
        _walk(session, branch, size, bucket, now, scan_cap)
        for branch in _branches(session, stream, now, grace_seconds, after, finality_seconds)
    ]
    known = [w.known_through for w in walks if w.known_through is not None]
    frontier = min(known) if known else None
    found = sorted(
        (r for w in walks for r in w.rows if frontier is None or r.item_id <= frontier),
        key=lambda r: int(r.item_id),
    )
    page = [
        QueueItem(
            stream=stream,
            item_id=int(r.item_id),
            at=r.at,
            holding_ref=str(r.holding_ref) if r.holding_ref is not None else None,
            currency=r.currency,
            amount_minor=r.amount,
            reference=str(r.reference),
            is_exception=r.marked == MARKED_EXCEPTION,
            age_days=max(0, (now - r.at).days),
            why=why_open(stream, r.state, r.detail, r.marked),
        )
        for r in found[:size]
    ]
    next_cursor = None
    if len(found) > size:
        next_cursor = str(page[-1].item_id)
    elif frontier is not None:
        next_cursor = str(frontier)  # a walk stopped at its cap: the next page goes on from there
    found_counts = counts(
        session, now, grace_seconds, cap=count_cap, finality_seconds=finality_seconds
    )
    return QueuePage(found_counts, page, next_cursor)
