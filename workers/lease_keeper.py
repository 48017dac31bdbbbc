"""A heartbeat that keeps a holding's activity lease while its reader is alive.

Leases are short (reconciliation.postings.activity.LEASE_SECONDS) so that a killed worker's
holdings are read again soon. A live reader renews its lease with every page it stores, but a
single gateway page can take longer than a lease when the gateway is slow and the client
retries; the keeper renews it from a thread meanwhile, every third of the lease, so only a dead
process (or a store that refuses the renewal) lets it lapse.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Final

import structlog
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.postings import LeasedHolding, renew_lease

#: Renewals per lease period: two can fail (a store hiccup) before the lease lapses.
RENEWALS_PER_LEASE: Final = 3

log = structlog.get_logger(__name__)


class LeaseKeeper:
    """`with LeaseKeeper(...)`: renews the lease in a daemon thread until the block ends."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        lease: LeasedHolding,
        seconds: float,
        clock: Callable[[], datetime],
    ) -> None:
        self._sessions = sessions
        self._lease = lease
        self._seconds = seconds
        self._clock = clock
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lease-{lease.holding_id}", daemon=True
        )
        #: Set when a renewal found the lease taken by another worker.
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join(self._seconds)

    def _run(self) -> None:
        while not self._done.wait(self._seconds / RENEWALS_PER_LEASE):
            try:
                if not renew_lease(self._sessions, self._lease, self._clock(), self._seconds):
                    self.lost = True
                    return
            except Exception as exc:  # noqa: BLE001 - the next beat tries again; the page write decides
                log.warning(
                    "activity.lease_renewal_failed",
                    holding_id=self._lease.holding_id,
                    error=type(exc).__name__,
                )
