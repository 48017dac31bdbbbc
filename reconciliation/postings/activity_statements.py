"""The fixed statements of an activity read: take the lease, read it, move the position, release.

Each runs once or more per holding read (the cursor move once per page), so each is built once
here with bind parameters and compiled once by SQLAlchemy's cache, rather than rebuilt from
expressions on every call (which cost more CPU than the database's work). They run unchanged
on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import (
    Boolean,
    Integer,
    SmallInteger,
    and_,
    bindparam,
    case,
    func,
    or_,
    select,
    update,
)

from reconciliation.postings.due_reads import PRIORITY_SIGNALLED
from reconciliation.store.models import ActivityCursor, Holding
from reconciliation.store.types import UTCDateTime

_LEASE_FREE_OR_OURS: Final = (
    ActivityCursor.holding_id == bindparam("holding"),
    or_(
        ActivityCursor.lease_owner.is_(None),
        ActivityCursor.lease_owner == bindparam("owner"),
        ActivityCursor.lease_expires_at < bindparam("now"),
    ),
)
_TAKE_VALUES: Final[dict[str, Any]] = {
    "lease_owner": bindparam("owner"),
    "lease_expires_at": bindparam("until"),
    "next_poll_at": bindparam("until"),
}

#: Take the lease if it is free, expired or already ours (params: holding, owner, now, until).
TAKE_LEASE: Final = update(ActivityCursor).where(*_LEASE_FREE_OR_OURS).values(**_TAKE_VALUES)

#: The same, refused when a read completed after the request was sent (adds `after_reads`).
TAKE_LEASE_AFTER_READS: Final = (
    update(ActivityCursor)
    .where(*_LEASE_FREE_OR_OURS, ActivityCursor.reads_completed <= bindparam("after_reads"))
    .values(**_TAKE_VALUES)
)

#: Where the leased holding is and its stored cursor (param: holding).
READ_LEASED: Final = (
    select(
        Holding.account_ref,
        Holding.endpoint_ref,
        Holding.holding_ref,
        ActivityCursor.after_posted_at,
        ActivityCursor.after_receipt_ref,
        ActivityCursor.after_line_ref,
        ActivityCursor.sort_direction,
        ActivityCursor.cursor_source,
        ActivityCursor.walk_top_posted_at,
        ActivityCursor.high_water_posted_at,
        ActivityCursor.quiet_reads,
    )
    .join(ActivityCursor, ActivityCursor.holding_id == Holding.id)
    .where(Holding.id == bindparam("holding"))
)

#: What reads of every holding found out about the provider's paging (no params): the largest
#: page served, the smallest page size accepted after a refusal, and whether any read saw
#: oldest_first refused or served. One provider serves every holding, so one finding counts
#: for all; a few thousand rows make this one quick scan per lease.
READ_TERMS: Final = select(
    func.max(ActivityCursor.largest_page).label("largest_page"),
    func.min(ActivityCursor.page_size).label("page_size"),
    func.max(case((ActivityCursor.oldest_first.is_(False), 1), else_=0)).label("refused"),
    func.max(case((ActivityCursor.oldest_first.is_(True), 1), else_=0)).label("served"),
)

_SERVED: Final = bindparam("served", type_=Integer)

#: Move the position past a page and renew the lease, only if the lease is still ours. The
#: position (cursor parts, their source, a walk's top and high-water) is written whole, as the
#: reader computed it from the page: an empty page passes the position it was asked with.
#: `served` (the page's entry count) raises `largest_page`; `page_size` and `oldest_first`
#: passed as NULL keep what the row found out before.
MOVE_CURSOR: Final = (
    update(ActivityCursor)
    .where(
        ActivityCursor.holding_id == bindparam("holding"),
        ActivityCursor.lease_owner == bindparam("owner"),
    )
    .values(
        lease_expires_at=bindparam("expires"),
        next_poll_at=bindparam("expires"),
        consecutive_errors=0,
        last_error=None,
        after_posted_at=bindparam("posted_at"),
        after_receipt_ref=bindparam("receipt_ref"),
        after_line_ref=bindparam("line_ref"),
        sort_direction=bindparam("direction"),
        cursor_source=bindparam("source"),
        walk_top_posted_at=bindparam("walk_top"),
        high_water_posted_at=bindparam("high_water"),
        largest_page=case(
            (
                func.coalesce(ActivityCursor.largest_page, 0) < _SERVED,
                _SERVED,
            ),
            else_=ActivityCursor.largest_page,
        ),
        page_size=func.coalesce(bindparam("page_size", type_=Integer), ActivityCursor.page_size),
        oldest_first=func.coalesce(
            bindparam("oldest_first", type_=Boolean), ActivityCursor.oldest_first
        ),
        last_advanced_at=func.coalesce(bindparam("advanced_at"), ActivityCursor.last_advanced_at),
        postings_read=ActivityCursor.postings_read + bindparam("read"),
    )
)

_BEGAN_AT: Final = bindparam("began_at", type_=UTCDateTime())

#: A signal (notification, terminal transfer) came after the read's listing began: the
#: holding is due again at once (from the moment the listing began), first in line.
_SIGNALLED_DURING_READ: Final = and_(
    _BEGAN_AT.is_not(None), ActivityCursor.signalled_at > _BEGAN_AT
)

#: Give the lease back, if still ours (params: holding, owner). NULL keeps a stored value:
#: `next_poll_at`, `priority` (due_priority), `caught_up_at` (the moment the read stored
#: everything up to: sets last_polled_at), `error` (sets last_error), `quiet_reads` and
#: `balance_due_at`; `completed` and `failed` (0 or 1) count a finished read and an error;
#: `began_at` (when the read's listing began, or NULL) lets a later signal override the due
#: time and priority. Returns one row when the lease was ours: whether such a signal came.
RELEASE_LEASE: Final = (
    update(ActivityCursor)
    .where(
        ActivityCursor.holding_id == bindparam("holding"),
        ActivityCursor.lease_owner == bindparam("owner"),
    )
    .values(
        lease_owner=None,
        lease_expires_at=None,
        next_poll_at=case(
            (_SIGNALLED_DURING_READ, _BEGAN_AT),
            else_=func.coalesce(
                bindparam("next_poll_at", type_=UTCDateTime()), ActivityCursor.next_poll_at
            ),
        ),
        due_priority=case(
            (_SIGNALLED_DURING_READ, PRIORITY_SIGNALLED),
            else_=func.coalesce(
                bindparam("priority", type_=SmallInteger), ActivityCursor.due_priority
            ),
        ),
        quiet_reads=func.coalesce(
            bindparam("quiet_reads", type_=Integer), ActivityCursor.quiet_reads
        ),
        balance_due_at=func.coalesce(
            bindparam("balance_due_at", type_=UTCDateTime()), ActivityCursor.balance_due_at
        ),
        last_polled_at=func.coalesce(bindparam("caught_up_at"), ActivityCursor.last_polled_at),
        reads_completed=ActivityCursor.reads_completed + bindparam("completed"),
        consecutive_errors=ActivityCursor.consecutive_errors + bindparam("failed"),
        last_error=func.coalesce(bindparam("error"), ActivityCursor.last_error),
    )
    .returning(_SIGNALLED_DURING_READ)
)

#: Push the lease's expiry on, if still ours (params: holding, owner, until): the heartbeat of
#: a reader waiting on a slow gateway page, so a short lease does not lapse under a live one.
RENEW_LEASE: Final = (
    update(ActivityCursor)
    .where(
        ActivityCursor.holding_id == bindparam("holding"),
        ActivityCursor.lease_owner == bindparam("owner"),
    )
    .values(lease_expires_at=bindparam("until"))
)
