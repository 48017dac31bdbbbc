"""Group commit: writer threads store queued deliveries together, one transaction per batch.

One commit per request spends a round trip and a WAL flush on every delivery; a writer that
takes everything queued while the previous commit ran and commits it at once spends them on the
whole batch, and batches grow exactly when load does. Each request still waits for *its* batch
to commit before it hears anything (invariant 1): the future it awaits is resolved only after
the commit returned, and a failed commit fails every request of the batch (503, the provider
retries).

Requests hand their deliveries over once per event-loop iteration, not one by one: every
delivery that reached the writer during one iteration goes to the writer threads as one list,
so a busy loop wakes a writer (and competes with it for the GIL) once per batch instead of once
per request.

On PostgreSQL several writers run side by side (the database commits them in parallel), so a
batch is being written while the previous one waits for its commit. Each writer keeps its own
connection (no pool checkout, no ping per batch); when the database drops it, the batch is
tried once more on a fresh connection before anyone hears 503. Trying again is safe even if the
lost commit went through: the retry finds the rows and reports duplicates, acknowledged too.
A batch that fails for another reason (a row the database refuses) is retried one delivery at a
time, so one bad row cannot take its neighbours down with it.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import structlog
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from app import metrics
from reconciliation.inbox import InboundDelivery, Outcome, Recorded, record_deliveries

#: Most deliveries committed in one transaction; bounds the statement size and the latency of
#: the first delivery of a very large batch.
MAX_BATCH: Final = 256
#: Seconds `stop` waits for queued deliveries to be committed before giving up on them.
STOP_TIMEOUT_SECONDS: Final = 15.0
#: Writer threads per database: PostgreSQL commits concurrent transactions in parallel; SQLite
#: has one writer at a time, so a second thread would only wait for its lock.
WRITERS: Final = {"postgresql": 3, "sqlite": 1}

log = structlog.get_logger(__name__)


class InboxUnavailableError(Exception):
    """The delivery could not be committed; it must not be acknowledged (503)."""


@dataclass(slots=True)
class _Waiting:
    delivery: InboundDelivery
    future: asyncio.Future[Recorded]
    loop: asyncio.AbstractEventLoop


class GroupCommitWriter:
    """Commits deliveries in batches from writer threads; `write` awaits the batch's commit."""

    def __init__(
        self,
        engine: Engine,
        *,
        on_committed: Callable[[Sequence[int]], None] | None,
        max_batch: int = MAX_BATCH,
        writers: int | None = None,
    ) -> None:
        self.engine = engine
        self._on_committed = on_committed
        self._max_batch = max_batch
        self._writers = writers or WRITERS.get(engine.dialect.name, 1)
        self._queue: queue.SimpleQueue[list[_Waiting] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._running = False
        # Deliveries of the current loop iteration, per event loop (only that loop touches them).
        self._gathering: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}

    def start(self) -> None:
        """Start the writer threads (idempotent)."""
        if self._running:
            return
        self._running = True
        for number in range(self._writers):
            thread = threading.Thread(
                target=_BatchWriter(self).run, name=f"inbox-writer-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Commit what is queued, then stop; later writes are refused with InboxUnavailableError.

        Anything that could not be committed in time, or slipped in while stopping, is failed
        (503) rather than left waiting forever.
        """
        if not self._running:
            return
        self._running = False
        for loop in list(self._gathering):
            self._hand_over(loop)
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()
        leftover = [w for gathered in self._gathering.values() for w in gathered]
        self._gathering.clear()
        while True:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            leftover.extend(more or ())
        if leftover:
            self.failed(leftover, InboxUnavailableError("the process stopped before the commit"))

    async def write(self, delivery: InboundDelivery) -> Recorded:
        """Queue one delivery and return once the batch holding it has committed."""
        if not self._running:
            raise InboxUnavailableError("the inbox writer is not running (the process is stopping)")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Recorded] = loop.create_future()
        queued_at = time.perf_counter()
        gathering = self._gathering.get(loop)
        if gathering is None:
            gathering = self._gathering[loop] = []
            loop.call_soon(self._hand_over, loop)
        gathering.append(_Waiting(delivery, future, loop))
        try:
            return await future
        finally:
            metrics.COMMIT_WAIT_SECONDS.observe(time.perf_counter() - queued_at)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give the writers everything this loop gathered during the iteration, as one list."""
        gathered = self._gathering.pop(loop, None)
        if gathered:
            self._queue.put(gathered)

    def next_batch(self) -> tuple[list[_Waiting], bool]:
        """Block for deliveries, then take whatever else is queued; True means stop after."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch = list(first)
        while len(batch) < self._max_batch:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None:
                return batch, True
            batch.extend(more)
        return batch, False

    def committed(self, batch: list[_Waiting], results: list[Recorded]) -> None:
        """Resolve the batch's futures (one hop into each event loop), then hand on new ids."""
        metrics.BATCH_SIZE.observe(len(batch))
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Waiting, Recorded]]] = {}
        for waiting, result in zip(batch, results, strict=True):
            by_loop.setdefault(waiting.loop, []).append((waiting, result))
        for loop, pairs in by_loop.items():
            _call_in_loop(loop, _set_results, pairs)
        if self._on_committed is not None:
            accepted = [r.row_id for r in results if r.outcome is Outcome.ACCEPTED and r.row_id]
            if accepted:
                self._on_committed(accepted)

    def failed(self, batch: list[_Waiting], exc: Exception) -> None:
        """Fail every request of the batch: nothing of it may be acknowledged."""
        log.error(
            "inbox.commit_failed",
            size=len(batch),
            error=type(exc).__name__,
            reason=_first_line(exc),
        )
        failure = InboxUnavailableError("the inbox could not commit the delivery")
        by_loop: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}
        for waiting in batch:
            by_loop.setdefault(waiting.loop, []).append(waiting)
        for loop, items in by_loop.items():
            _call_in_loop(loop, _set_exceptions, items, failure)


class _BatchWriter:
    """One writer thread's loop and its own database connection."""

    def __init__(self, writer: GroupCommitWriter) -> None:
        self._writer = writer
        self._connection: Connection | None = None
        self._kind = _ErrorKinds(writer.engine)

    def run(self) -> None:
        try:
            while True:
                batch, stop = self._writer.next_batch()
                if batch:
                    self._commit(batch)
                if stop:
                    return
        finally:
            self._drop_connection()

    def _commit(self, batch: list[_Waiting]) -> None:
        try:
            results = self._record([w.delivery for w in batch])
        except Exception as exc:  # noqa: BLE001 - whatever it is, nobody may get a 2xx
            if not self._kind.refused_row(exc) or len(batch) == 1:
                self._writer.failed(batch, exc)
                return
            log.error("inbox.batch_refused", size=len(batch), error=type(exc).__name__)
            for waiting in batch:
                self._commit([waiting])
            return
        self._writer.committed(batch, results)

    def _record(self, deliveries: list[InboundDelivery]) -> list[Recorded]:
        try:
            return self._record_once(deliveries)
        except Exception as exc:
            if not self._kind.connectivity(exc):
                raise
            log.warning("inbox.reconnecting", error=type(exc).__name__)
            self._drop_connection()
            return self._record_once(deliveries)

    def _record_once(self, deliveries: list[InboundDelivery]) -> list[Recorded]:
        connection = self._connection
        if connection is None or connection.invalidated or connection.closed:
            self._drop_connection()
            connection = self._connection = self._writer.engine.connect()
        with connection.begin():
            return record_deliveries(connection, deliveries)

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.invalidate()
                connection.close()
            except Exception:  # noqa: BLE001, S110 - it is being thrown away anyway
                pass


def _call_in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        log.warning("inbox.loop_closed", detail="a request's event loop closed before its commit")


def _set_results(pairs: list[tuple[_Waiting, Recorded]]) -> None:
    for waiting, result in pairs:
        if not waiting.future.done():
            waiting.future.set_result(result)


def _set_exceptions(items: list[_Waiting], failure: Exception) -> None:
    for waiting in items:
        if not waiting.future.done():
            waiting.future.set_exception(failure)


class _ErrorKinds:
    """Sorts database failures, whether SQLAlchemy wrapped them or the driver raised them.

    The inbox's fast path talks to the driver directly (reconciliation.inbox_insert), so its
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


def _first_line(exc: Exception) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
