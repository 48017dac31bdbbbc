"""Only one scheduler sends ticks at a time: a lock with a time to live, renewed while alive.

With Redis, a redis-py `Lock` (SET NX PX, released only by its token): the broker's own Redis
is where every scheduler can see it. Without Redis, a row of the store's `leases` table, taken
with one conditional UPDATE (or the first INSERT) like every other lease in recon. A scheduler
that dies simply stops renewing; another takes over when the time to live runs out.

`hold()` both takes and renews; it answers whether this process is the active scheduler now.
Any error talking to the lock's backend counts as "not held": a scheduler that cannot tell
must stay quiet rather than risk a second one ticking.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final, Protocol

import redis
import structlog
from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store import Lease, insert_ignoring_conflicts, rows_touched, transaction, utcnow

#: Name of the lock (Redis key, or `leases.name`).
LOCK_NAME: Final = "recon:scheduler"

#: Seconds the lock outlives its last renewal. Renewed every third of that.
LOCK_SECONDS: Final = 30.0

log = structlog.get_logger(__name__)


class SchedulerLock(Protocol):
    """Take-or-renew and release of the scheduler's singleton lock."""

    def hold(self) -> bool:
        """Take or renew the lock; True when this process holds it now."""
        ...

    def release(self) -> None:
        """Give the lock up (on shutdown), so a standby takes over at once."""
        ...


class RedisSchedulerLock:
    """The lock as a Redis key with a TTL, owned by a random token."""

    def __init__(self, redis_url: str, owner: str, seconds: float = LOCK_SECONDS) -> None:
        self._client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        # thread_local=False: APScheduler renews from whichever pool thread runs the job.
        self._lock = self._client.lock(
            LOCK_NAME, timeout=seconds, blocking=False, thread_local=False
        )
        self.owner = owner

    def hold(self) -> bool:
        """Renew if ours, else try to take it."""
        try:
            if self._lock.owned():
                self._lock.reacquire()
                return True
            return bool(self._lock.acquire(blocking=False))
        except (redis.RedisError, OSError) as exc:
            log.warning("scheduler_lock.unavailable", backend="redis", error=type(exc).__name__)
            return False

    def release(self) -> None:
        """Release if ours."""
        try:
            if self._lock.owned():
                self._lock.release()
        except (redis.RedisError, OSError):
            pass
        finally:
            self._client.close()


class StoreSchedulerLock:
    """The lock as a row of the store's `leases` table."""

    def __init__(
        self, sessions: sessionmaker[Session], owner: str, seconds: float = LOCK_SECONDS
    ) -> None:
        self._sessions = sessions
        self._seconds = seconds
        self.owner = owner

    def hold(self) -> bool:
        """Renew if ours or expired; insert if absent."""
        now = utcnow()
        expires = now + timedelta(seconds=self._seconds)
        try:
            with transaction(self._sessions) as session:
                taken = rows_touched(
                    session.execute(
                        update(Lease)
                        .where(
                            Lease.name == LOCK_NAME,
                            (Lease.owner == self.owner) | (Lease.expires_at < now),
                        )
                        .values(owner=self.owner, expires_at=expires)
                    )
                )
                if taken == 1:
                    return True
                created = session.scalar(
                    insert_ignoring_conflicts(session, Lease, ["name"])
                    .values(name=LOCK_NAME, owner=self.owner, expires_at=expires)
                    .returning(Lease.name)
                )
                return created is not None
        except Exception as exc:  # noqa: BLE001 - unknown means "not ours"
            log.warning("scheduler_lock.unavailable", backend="store", error=type(exc).__name__)
            return False

    def release(self) -> None:
        """Delete the row if ours."""
        try:
            with transaction(self._sessions) as session:
                session.execute(
                    delete(Lease).where(Lease.name == LOCK_NAME, Lease.owner == self.owner)
                )
        except Exception as exc:  # noqa: BLE001 - it expires by itself anyway
            log.warning("scheduler_lock.release_failed", error=type(exc).__name__)
