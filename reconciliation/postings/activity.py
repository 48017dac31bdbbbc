"""Balance activity in the store: the per-holding position, its lease, and pages of postings.

Invariant 3 (docs/architecture.md) lives here. A page's postings and the position that follows
them (the cursor, or a newest-first walk's state: `upstream.activity_walk.ReadPosition`) are
written in one transaction, so after any crash the stored position is exactly where the last
stored page left off: the next reader resumes from it and skips nothing it lacks. Postings are
inserted with ON CONFLICT (journal_ref, line_ref) DO NOTHING, so a page read twice (a lease that
expired under a stalled worker, the ties a walk re-reads at its high-water) lands once.

What reads find out about the provider's paging (the largest page served, a page size it
accepted after refusing a larger one, whether it serves oldest_first) is written on the cursor
row with the page that showed it, and a lease hands the reader the findings of every row.

The lease makes "one reader per holding" hold across processes and machines with nothing but
the store: taking it is one conditional UPDATE (free, expired, or already ours), and every page
write is guarded by `lease_owner = me`, so a worker that lost its lease rolls its page back and
stops instead of moving a cursor someone else now owns. This is plain SQL that behaves the same
on SQLite (one writer at a time) and PostgreSQL (row locks, re-checked after a wait).

Each write transaction starts with a write statement, which on SQLite takes the write lock up
front (waiting under the busy timeout) rather than upgrading a read snapshot mid-transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.postings.activity_copy import compile_move, copy_page, page_transaction
from reconciliation.postings.activity_statements import (
    MOVE_CURSOR,
    READ_LEASED,
    READ_TERMS,
    RELEASE_LEASE,
    RENEW_LEASE,
    TAKE_LEASE,
    TAKE_LEASE_AFTER_READS,
)
from reconciliation.postings.due_reads import PRIORITY_CATCH_UP
from reconciliation.store.db import transaction
from reconciliation.store.models import UNMATCHED, ActivityCursor, Holding, Posting
from reconciliation.store.tables import postings
from reconciliation.store.write_statements import insert_ignoring_conflicts, rows_touched
from upstream import FROM_ENTRY, FROM_GATEWAY, CursorSource, HoldingAddress, ReadPosition
from upstream import ActivityCursor as WireCursor
from upstream import Posting as WirePosting

#: How long a lease lasts without renewal. Every stored page renews it, and a live reader's
#: heartbeat renews it meanwhile (workers.lease_keeper), so only a worker that died (or stalled
#: this long) loses its holding to another. Short, because a worker killed mid-catch-up leaves
#: its holdings unread for this long: 60 s cost about a minute of catch-up per kill.
LEASE_SECONDS: Final = 15.0

#: PostgreSQL's page write: COPY, then one statement storing the page and moving the cursor.
_COPY_PAGE: Final = compile_move(MOVE_CURSOR)

#: Longest error text kept on the cursor row (the full one is in the worker's log).
ERROR_TEXT_LIMIT: Final = 2000


class LeaseLostError(Exception):
    """Another worker holds this holding's lease now; the page was rolled back, stop reading."""


@dataclass(frozen=True, slots=True)
class StoredTerms:
    """What reads of all holdings found out about the provider's paging (None: nothing yet)."""

    largest_page: int | None = None
    page_size: int | None = None
    oldest_first: bool | None = None


@dataclass(frozen=True, slots=True)
class LeasedHolding:
    """What a lease holder needs to read on: where the holding is and where to resume."""

    holding_id: int
    address: HoldingAddress
    position: ReadPosition
    owner: str
    terms: StoredTerms = StoredTerms()
    #: Completed reads in a row that found nothing (the silent schedule backs off on it).
    quiet_reads: int = 0

    @property
    def cursor(self) -> WireCursor | None:
        """The stored cursor (an oldest-first read's, or a walk's in progress)."""
        return self.position.cursor


def lease_until(now: datetime, seconds: float = LEASE_SECONDS) -> datetime:
    """Expiry of a lease taken or renewed at `now`."""
    return now + timedelta(seconds=seconds)


def ensure_cursor_rows(session: Session, holding_ids: Sequence[int], now: datetime) -> None:
    """Create the missing cursor rows (due at once) for holdings; existing rows stay as they are."""
    if not holding_ids:
        return
    rows = [
        {
            "holding_id": h,
            "next_poll_at": now,
            "due_priority": PRIORITY_CATCH_UP,
            "balance_due_at": now,
            "consecutive_errors": 0,
            "postings_read": 0,
            "reads_completed": 0,
        }
        for h in holding_ids
    ]
    session.execute(insert_ignoring_conflicts(session, ActivityCursor, ["holding_id"]), rows)


def acquire_lease(
    factory: sessionmaker[Session],
    holding_id: int,
    owner: str,
    now: datetime,
    seconds: float = LEASE_SECONDS,
    after_reads: int | None = None,
) -> LeasedHolding | None:
    """Take the holding's lease if it is free, expired or ours; None when someone else has it.

    With `after_reads` (the holding's `reads_completed` when the request was sent), a request
    that a completed read has already answered is refused too: it would only re-ask the
    gateway for what the store has. The stored cursor is read after the lease is taken, in the
    same transaction, so it is the one the previous holder committed last.
    """
    until = lease_until(now, seconds)
    params: dict[str, Any] = {"holding": holding_id, "owner": owner, "now": now, "until": until}
    take = TAKE_LEASE
    if after_reads is not None:
        take = TAKE_LEASE_AFTER_READS
        params["after_reads"] = after_reads
    with transaction(factory) as session:
        connection = session.connection()
        taken = rows_touched(connection.execute(take, params))
        if taken == 0:
            # No row yet, or someone else's lease: create the row if missing and ask again
            # (the usual case, an existing free row, costs one statement, not two).
            ensure_cursor_rows(session, [holding_id], now)
            taken = rows_touched(connection.execute(take, params))
        if taken != 1:
            return None
        row = connection.execute(READ_LEASED, {"holding": holding_id}).one()
        found = connection.execute(READ_TERMS).one()
    # A refusal anywhere outweighs a success elsewhere: the provider may have dropped it since.
    oldest_first = False if found.refused else (True if found.served else None)
    return LeasedHolding(
        holding_id=holding_id,
        address=HoldingAddress(
            account_ref=row.account_ref, endpoint_ref=row.endpoint_ref, holding_ref=row.holding_ref
        ),
        position=ReadPosition(
            cursor=cursor_from_parts(
                row.after_posted_at, row.after_receipt_ref, row.after_line_ref, row.sort_direction
            ),
            cursor_source=_source(row.cursor_source),
            walk_top=row.walk_top_posted_at,
            high_water=row.high_water_posted_at,
        ),
        owner=owner,
        quiet_reads=row.quiet_reads,
        terms=StoredTerms(
            largest_page=found.largest_page, page_size=found.page_size, oldest_first=oldest_first
        ),
    )


def _source(stored: str | None) -> CursorSource | None:
    """The stored cursor's source; a value this version does not know is refused, not guessed."""
    if stored is None:
        return None
    if stored == FROM_GATEWAY:
        return FROM_GATEWAY
    if stored == FROM_ENTRY:
        return FROM_ENTRY
    raise ValueError(f"stored activity cursor_source {stored!r} is neither gateway nor entry")


def cursor_from_parts(
    posted_at: str | None, receipt_ref: str | None, line_ref: str | None, direction: str | None
) -> WireCursor | None:
    """The stored cursor as the gateway issued it, or None before the first page.

    A row with only some parts set was not written by `store_page` (which writes all four or
    none); resuming from it would mix cursors, so it is refused loudly.
    """
    parts = (posted_at, receipt_ref, line_ref, direction)
    if all(p is None for p in parts):
        return None
    if any(p is None for p in parts):
        raise ValueError(
            "stored activity cursor is incomplete (some of its four parts are empty): clear all "
            "four to re-read the holding from the start, or restore them from a backup"
        )
    assert posted_at is not None and receipt_ref is not None
    assert line_ref is not None and direction is not None
    return WireCursor(
        after_posted_at=posted_at,
        after_receipt_ref=receipt_ref,
        after_line_ref=line_ref,
        sort_direction=direction,
    )


def posting_rows(
    holding_id: int, entries: Sequence[WirePosting], now: datetime
) -> list[dict[str, Any]]:
    """Postings as insert parameters: plain dicts for one executemany, no ORM objects."""
    return [
        {
            "journal_ref": e.journal_ref,
            "line_ref": e.line_ref,
            "receipt_ref": e.receipt_ref,
            "holding_id": holding_id,
            "posted_at": e.posted_at,
            "side": e.posting_side,
            "effect": e.balance_effect,
            "kind": e.journal_kind,
            "amount_minor": e.amount_minor_units,
            "currency": str(e.value_unit),
            "partition": e.ledger_partition,
            "normal_side": e.ledger_normal_side,
            "ingested_at": now,
            "match_status": UNMATCHED,
        }
        for e in entries
    ]


def insert_postings(
    session: Session, holding_id: int, entries: Sequence[WirePosting], now: datetime
) -> None:
    """Insert a page of postings, skipping any already stored (same journal_ref + line_ref).

    The portable path (SQLite, and PostgreSQL for a page stored without its cursor): one
    executemany of the Core table insert, run in C by the driver. PostgreSQL's page write in
    `store_page` goes through `reconciliation.postings.activity_copy` instead.
    """
    session.connection().execute(
        insert_ignoring_conflicts(session, postings, ["journal_ref", "line_ref"]),
        posting_rows(holding_id, entries, now),
    )


def store_page(
    session: Session,
    lease: LeasedHolding,
    entries: Sequence[WirePosting],
    position: ReadPosition | WireCursor,
    now: datetime,
    seconds: float = LEASE_SECONDS,
    *,
    page_size: int | None = None,
    oldest_first: bool | None = None,
) -> None:
    """Insert a page's postings and store the position after them, in one transaction.

    `position` is written whole (a bare cursor is one the gateway gave); `page_size` (a size
    the provider accepted after refusing a larger one) and `oldest_first` (served or refused)
    are findings to keep, None to keep what the row has.

    `session` must have no transaction open: this one begins and commits (or rolls back) its
    own. A reader keeps one session for all its pages, so each page costs no pool checkout.
    Raises LeaseLostError (after rolling back) when the lease is no longer ours. The lease is
    renewed by the same statement that moves the position.
    """
    if isinstance(position, WireCursor):
        position = ReadPosition(cursor=position, cursor_source=FROM_GATEWAY)
    cursor = position.cursor
    params = {
        "holding": lease.holding_id,
        "owner": lease.owner,
        "expires": lease_until(now, seconds),
        "posted_at": cursor.after_posted_at if cursor else None,
        "receipt_ref": cursor.after_receipt_ref if cursor else None,
        "line_ref": cursor.after_line_ref if cursor else None,
        "direction": cursor.sort_direction if cursor else None,
        "source": position.cursor_source if cursor else None,
        "walk_top": position.walk_top,
        "high_water": position.high_water,
        "served": len(entries),
        "page_size": page_size,
        "oldest_first": oldest_first,
        "advanced_at": now if entries else None,
        "read": len(entries),
    }
    with page_transaction(session):
        if entries and session.get_bind().dialect.name == "postgresql":
            moved = copy_page(session, entries, _COPY_PAGE, params | {"now": now})
        else:
            if entries:
                insert_postings(session, lease.holding_id, entries, now)
            moved = rows_touched(session.connection().execute(MOVE_CURSOR, params))
        if moved != 1:
            raise LeaseLostError(f"holding {lease.holding_id}: lease taken over by another worker")


def release_lease(
    factory: sessionmaker[Session],
    lease: LeasedHolding,
    next_poll_at: datetime | None,
    *,
    caught_up_at: datetime | None = None,
    completed: bool | None = None,
    error: str | None = None,
    priority: int | None = None,
    began_at: datetime | None = None,
    quiet_reads: int | None = None,
    balance_due_at: datetime | None = None,
) -> bool:
    """Give the lease back and say when the holding is due again; record an error if any.
    True when a signal came during the read (see `began_at`): the holding is due again at once,
    and whoever released it can send that read now rather than leave it to the next tick.

    `caught_up_at` is the moment the read has stored every posting up to (`last_polled_at`,
    which the balance check trusts: a snapshot observed later waits for a later read). A read
    that reached the last page counts in `reads_completed` (`completed`; by default, whether
    `caught_up_at` is given). `next_poll_at` None leaves the due time as the last renewal set
    it. A release by a worker that no longer holds the lease changes nothing.

    `priority` is why the holding is due next (reconciliation.postings.due_reads); with
    `began_at` (when the read's listing began), a signal that came after it overrides both:
    the holding is due again at once, first in line. `quiet_reads` and `balance_due_at` are
    written when given (None keeps the row's).
    """
    done = caught_up_at is not None if completed is None else completed
    params = {
        "holding": lease.holding_id,
        "owner": lease.owner,
        "next_poll_at": next_poll_at,
        "caught_up_at": caught_up_at,
        "completed": 1 if done else 0,
        "failed": 0 if error is None else 1,
        "error": None if error is None else error[:ERROR_TEXT_LIMIT],
        "priority": priority,
        "began_at": began_at,
        "quiet_reads": quiet_reads,
        "balance_due_at": balance_due_at,
    }
    with transaction(factory) as session:
        return bool(session.connection().execute(RELEASE_LEASE, params).scalar())


def renew_lease(
    factory: sessionmaker[Session],
    lease: LeasedHolding,
    now: datetime,
    seconds: float = LEASE_SECONDS,
) -> bool:
    """Push the lease's expiry to `now + seconds`; False when it is no longer ours."""
    params = {"holding": lease.holding_id, "owner": lease.owner, "until": lease_until(now, seconds)}
    with transaction(factory) as session:
        return rows_touched(session.connection().execute(RENEW_LEASE, params)) == 1


def watched_without_cursor(session: Session) -> list[int]:
    """Watched holdings that have no cursor row yet (created by hand or by an older version)."""
    return list(
        session.scalars(
            select(Holding.id)
            .outerjoin(ActivityCursor, ActivityCursor.holding_id == Holding.id)
            .where(Holding.watched.is_(True), ActivityCursor.holding_id.is_(None))
        )
    )


def stored_postings_count(session: Session, holding_id: int | None = None) -> int:
    """How many postings the store holds (for one holding, or all)."""
    query = select(func.count()).select_from(Posting)
    if holding_id is not None:
        query = query.where(Posting.holding_id == holding_id)
    return int(session.scalar(query) or 0)
