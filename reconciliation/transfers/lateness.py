"""When a transfer we asked for is late: the one definition the alert, the report and the
console share.

A transfer is late once it is still not terminal past its finality deadline: the deadline the
poller read from the provider (`finality_deadline_at`) when there is one, otherwise its request
time (or, failing that, when we first stored it) plus the policy's finality deadline. The
`finality_overdue` alert is raised for exactly these transfers, and the report and the console
count exactly these as exceptions rather than "waiting", so the three never disagree.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Table, and_, false, func, or_

from reconciliation.store.tables import transfers


def finality_deadline(
    deadline_at: datetime | None,
    requested_at: datetime | None,
    created_at: datetime,
    allowed_seconds: int,
) -> datetime:
    """The moment a transfer not yet terminal becomes late (see the module docstring)."""
    if deadline_at is not None:
        return deadline_at
    return (requested_at or created_at) + timedelta(seconds=allowed_seconds)


def late(now: datetime, allowed_seconds: int, t: Table = transfers) -> ColumnElement[bool]:
    """SQL: the transfer is not terminal and `now` is past its finality deadline.

    Written as comparisons with times computed here, not date arithmetic in SQL, so it reads
    the same on SQLite and PostgreSQL.
    """
    asked = func.coalesce(t.c.requested_at, t.c.created_at)
    own = t.c.finality_deadline_at
    return and_(
        t.c.is_terminal == false(),  # the partial index of transfers not yet terminal
        or_(
            and_(own.is_not(None), own < now),
            and_(own.is_(None), asked < now - timedelta(seconds=allowed_seconds)),
        ),
    )
