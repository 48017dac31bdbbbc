"""One reconciliation pass at a time, across every worker process and machine.

Two passes at once would not corrupt matching (every statement reads only 'unmatched' rows),
but they would race on alerts and watermarks and double the load for nothing. The lease is a
row in the store with an expiry, taken with one conditional UPDATE (or the INSERT that creates
it), which is atomic on SQLite and PostgreSQL alike; a crashed holder's lease simply expires.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import delete, or_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.models import Lease
from reconciliation.store.write_statements import rows_touched

#: The lease's name in the leases table.
PASS_LEASE: Final = "reconcile-pass"

#: How long a pass may hold the lease: far above a full pass over millions of rows (about a
#: minute), so only a crashed pass ever lets it lapse.
PASS_LEASE_SECONDS: Final = 900


def lease_owner() -> str:
    """Who holds it, readable in the store: host, process, and a unique suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(factory: sessionmaker[Session], owner: str, now: datetime) -> bool:
    """Take the pass lease if it is free or expired; False when another pass holds it."""
    expires = now + timedelta(seconds=PASS_LEASE_SECONDS)
    with factory.begin() as session:
        taken = session.execute(
            update(Lease)
            .where(Lease.name == PASS_LEASE, or_(Lease.expires_at < now, Lease.owner == owner))
            .values(owner=owner, expires_at=expires)
            .execution_options(synchronize_session=False)
        )
        if rows_touched(taken):
            return True
    try:
        with factory.begin() as session:
            session.add(Lease(name=PASS_LEASE, owner=owner, expires_at=expires))
    except IntegrityError:
        return False
    return True


def release(factory: sessionmaker[Session], owner: str) -> None:
    with factory.begin() as session:
        session.execute(delete(Lease).where(Lease.name == PASS_LEASE, Lease.owner == owner))
