"""The fixed statements of an activity read: take the lease, read it, move the cursor, release.

Each runs once or more per holding read (the cursor move once per page), so each is built once
here with bind parameters and compiled once by SQLAlchemy's cache, rather than rebuilt from
expressions on every call (which cost more CPU than the database's work). They run unchanged
on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import bindparam, func, or_, select, update

from reconciliation.store.models import ActivityCursor, Holding

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
    )
    .join(ActivityCursor, ActivityCursor.holding_id == Holding.id)
    .where(Holding.id == bindparam("holding"))
)

#: Move the cursor past a page and renew the lease, only if the lease is still ours. A part
#: passed as NULL keeps its stored value (an empty page).
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
        after_posted_at=func.coalesce(bindparam("posted_at"), ActivityCursor.after_posted_at),
        after_receipt_ref=func.coalesce(bindparam("receipt_ref"), ActivityCursor.after_receipt_ref),
        after_line_ref=func.coalesce(bindparam("line_ref"), ActivityCursor.after_line_ref),
        sort_direction=func.coalesce(bindparam("direction"), ActivityCursor.sort_direction),
        last_advanced_at=func.coalesce(bindparam("advanced_at"), ActivityCursor.last_advanced_at),
        postings_read=ActivityCursor.postings_read + bindparam("read"),
    )
)

#: Give the lease back, if still ours (params: holding, owner). NULL keeps a stored value:
#: `next_poll_at`, `caught_up_at` (sets last_polled_at) and `error` (sets last_error);
#: `completed` and `failed` (0 or 1) count a finished read and an error.
RELEASE_LEASE: Final = (
    update(ActivityCursor)
    .where(
        ActivityCursor.holding_id == bindparam("holding"),
        ActivityCursor.lease_owner == bindparam("owner"),
    )
    .values(
        lease_owner=None,
        lease_expires_at=None,
        next_poll_at=func.coalesce(bindparam("next_poll_at"), ActivityCursor.next_poll_at),
        last_polled_at=func.coalesce(bindparam("caught_up_at"), ActivityCursor.last_polled_at),
        reads_completed=ActivityCursor.reads_completed + bindparam("completed"),
        consecutive_errors=ActivityCursor.consecutive_errors + bindparam("failed"),
        last_error=func.coalesce(bindparam("error"), ActivityCursor.last_error),
    )
)
