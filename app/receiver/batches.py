"""What the group-commit writer and its database back ends share: a waiting delivery, the
outcome hand-back, and how database failures are told apart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from app import metrics
from reconciliation.notifications import InboundDelivery, Outcome, Recorded

#: Most deliveries committed in one transaction; bounds the statement size and the latency of
#: the first delivery of a very large batch.
MAX_BATCH: Final = 256

log = structlog.get_logger(__name__)


class InboxUnavailableError(Exception):
    """The delivery could not be committed; it must not be acknowledged (503)."""


@dataclass(slots=True)
class Waiting:
    """A delivery waiting for its batch's commit, and the future its request awaits."""

    delivery: InboundDelivery
    future: asyncio.Future[Recorded]
    loop: asyncio.AbstractEventLoop
    queued_at: float


class Backend(Protocol):
    """Commits batches handed over by the writer (threads for SQLite, tasks for PostgreSQL)."""

    async def start(self) -> None:
        """Get ready to take batches (called in the app's event loop)."""
        ...

    def submit(self, batch: list[Waiting]) -> None:
        """Take a batch (called in the event loop; never blocks)."""
        ...

    async def stop(self, timeout: float) -> list[Waiting]:
        """Commit what was submitted, then stop; return what could not be committed in time."""
        ...


class Resolver:
    """Hands outcomes back to the requests' event loops, and committed row ids onward."""

    def __init__(self, on_committed: Callable[[Sequence[int]], None] | None) -> None:
        self._on_committed = on_committed

    def committed(self, batch: list[Waiting], results: list[Recorded]) -> None:
        """Resolve each request's future (once per event loop), then hand on new row ids.

        A web process runs one event loop, so a batch whose requests all came from one loop
        (the only case there) is handed back whole, without sorting it by loop.
        """
        if len(batch) != len(results):
            raise ValueError(f"{len(results)} outcomes for a batch of {len(batch)}")
        now = time.perf_counter()
        metrics.BATCH_SIZE.observe(len(batch))
        metrics.COMMIT_WAIT_SECONDS.observe_each([now - w.queued_at for w in batch])
        first_loop = batch[0].loop if batch else None
        if all(w.loop is first_loop for w in batch):
            if first_loop is not None:
                _call_in_loop(first_loop, _set_results, batch, results)
        else:
            by_loop: dict[asyncio.AbstractEventLoop, tuple[list[Waiting], list[Recorded]]] = {}
            for waiting, result in zip(batch, results, strict=True):
                waits, outcomes = by_loop.setdefault(waiting.loop, ([], []))
                waits.append(waiting)
                outcomes.append(result)
            for loop, (waits, outcomes) in by_loop.items():
                _call_in_loop(loop, _set_results, waits, outcomes)
        if self._on_committed is not None:
            accepted = [r.row_id for r in results if r.outcome is Outcome.ACCEPTED and r.row_id]
            if accepted:
                self._on_committed(accepted)

    def failed(self, batch: list[Waiting], exc: BaseException) -> None:
        """Fail every request of the batch: nothing of it may be acknowledged."""
        log.error(
            "inbox.commit_failed",
            size=len(batch),
            error=type(exc).__name__,
            reason=_first_line(exc),
        )
        failure = InboxUnavailableError("the inbox could not commit the delivery")
        by_loop: dict[asyncio.AbstractEventLoop, list[Waiting]] = {}
        for waiting in batch:
            by_loop.setdefault(waiting.loop, []).append(waiting)
        for loop, items in by_loop.items():
            _call_in_loop(loop, _set_exceptions, items, failure)


class ErrorKinds:
    """Sorts database failures, whether SQLAlchemy wrapped them or the driver raised them.

    The inbox's fast path talks to the driver directly (reconciliation.notifications.inbox_insert), so its
    errors arrive as the driver's own PEP 249 classes.
    """

    def __init__(self, engine: Engine) -> None:
        dbapi = engine.dialect.loaded_dbapi
        self._lost = (
            OperationalError,
            InterfaceError,
            dbapi.OperationalError,
            dbapi.InterfaceError,
        )
        self._database = (DBAPIError, dbapi.Error)

    def connectivity(self, exc: BaseException) -> bool:
        """The connection or the server is gone: try a fresh connection, or answer 503."""
        if isinstance(exc, DBAPIError) and exc.connection_invalidated:
            return True
        return isinstance(exc, self._lost)

    def refused_row(self, exc: BaseException) -> bool:
        """The database refused the statement itself: some row of the batch may be at fault."""
        return isinstance(exc, self._database) and not self.connectivity(exc)


def _call_in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn(*args)
        return
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        log.warning("inbox.loop_closed", detail="a request's event loop closed before its commit")


def _set_results(batch: list[Waiting], results: list[Recorded]) -> None:
    for waiting, result in zip(batch, results, strict=True):
        if not waiting.future.done():
            waiting.future.set_result(result)


def _set_exceptions(items: list[Waiting], failure: Exception) -> None:
    for waiting in items:
        if not waiting.future.done():
            waiting.future.set_exception(failure)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
