"""Batches committed on PostgreSQL from the event loop itself (asyncio psycopg, autocommit).

A few worker tasks, each with a connection of its own, take the batches handed over and commit
each with one statement (reconciliation.notifications.inbox_insert): one round trip, the statement its own
transaction, durable when it returns. Running in the event loop rather than in threads saves
the hand-offs between threads (and the fights over the GIL) that cost as much as the insert.

One commit is in flight at a time while commits are quick: what arrives meanwhile waits and
goes out as one batch, so a commit carries more deliveries and both this process and the
database spend less per delivery. A commit that runs longer than SLOW_COMMIT_SECONDS (a slow
disk, a lock) lets the next one start beside it, up to one per connection, which the database
handles in parallel (its unique indexes arbitrate between them). The rare batch with another body under a known id finishes in
a worker thread, in one ordinary transaction with its alert (reconciliation.notifications.inbox). A lost
connection is replaced and the batch tried once more before anyone hears 503 (safe: a commit
that did land shows up as duplicates, acknowledged too); a batch the database refuses for
another reason is retried one delivery at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

import psycopg
import structlog
from sqlalchemy import Engine

from app.receiver.batches import MAX_BATCH, ErrorKinds, Resolver, Waiting
from reconciliation.notifications import (
    InboundDelivery,
    Recorded,
    insert_originals_async,
    outcomes,
    plan_batch,
    record_others,
)

#: Worker tasks (and connections): how many commits may overlap once they turn slow (each
#: batch costs one round trip whatever its size, so quick commits go one at a time).
CONNECTIONS: Final = 4
#: Seconds a commit runs before the next batch may start beside it: several times a quick
#: commit of a full batch, so quick commits go one at a time and carry more deliveries each
#: (less CPU per delivery in the web process and in the database than with no wait:
#: docs/decisions.md, "Figures behind the code's choices"), and a stalled one holds the next
#: batch up for no longer than this.
SLOW_COMMIT_SECONDS: Final = 0.005
#: Seconds to wait for the database to accept a connection (the store's own setting).
CONNECT_TIMEOUT_SECONDS: Final = 5

#: Seconds a batch's statements may wait for a lock or run, unless told otherwise. Without a
#: bound, a lock held on the inbox (a migration, a manual LOCK, a long VACUUM FULL) stalls the
#: worker task and every batch queued behind it for as long as the lock lasts.
STATEMENT_TIMEOUT_SECONDS: Final = 10.0

log = structlog.get_logger(__name__)

Connection = psycopg.AsyncConnection[Any]


class PostgresBatches:
    """Worker tasks in the event loop, each committing whole batches on its own connection."""

    def __init__(
        self,
        engine: Engine,
        resolver: Resolver,
        *,
        connections: int = CONNECTIONS,
        statement_timeout: float = STATEMENT_TIMEOUT_SECONDS,
        slow_commit: float = SLOW_COMMIT_SECONDS,
    ) -> None:
        self._engine = engine
        self._timeout_ms = max(1, int(statement_timeout * 1000))
        self._resolver = resolver
        self._count = connections
        self._kinds = ErrorKinds(engine)
        self._conninfo = engine.url.set(drivername="postgresql").render_as_string(
            hide_password=False
        )
        self._slow = slow_commit
        self._queue: asyncio.Queue[list[Waiting] | None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # Taking work is one worker at a time (the others wait their turn here), and it waits
        # for the commits in flight (worker number -> start, loop time) to end or turn slow.
        self._taking: asyncio.Lock | None = None
        self._in_flight: dict[int, float] = {}
        self._commit_ended: asyncio.Future[None] | None = None

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._taking = asyncio.Lock()
        self._tasks = [
            asyncio.create_task(self._work(n), name=f"inbox-writer-{n}") for n in range(self._count)
        ]

    def submit(self, batch: list[Waiting]) -> None:
        if self._queue is None:
            raise RuntimeError("PostgresBatches.start() must run first")
        self._queue.put_nowait(batch)

    async def stop(self, timeout: float) -> list[Waiting]:
        queue = self._queue
        if queue is None:
            return []
        for _ in self._tasks:
            queue.put_nowait(None)
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=timeout)
            for task in pending:
                task.cancel()
        self._tasks = []
        leftover: list[Waiting] = []
        while not queue.empty():
            leftover.extend(queue.get_nowait() or ())
        return leftover

    async def _work(self, number: int) -> None:
        queue, taking = self._queue, self._taking
        if queue is None or taking is None:
            raise RuntimeError("PostgresBatches.start() must run first")
        worker = _Worker(self)
        loop = asyncio.get_running_loop()
        try:
            while True:
                async with taking:
                    first = await queue.get()
                    if first is None:
                        return
                    await self._until_free(loop)
                    batch, stop = list(first), False
                    while len(batch) < MAX_BATCH and not queue.empty():
                        more = queue.get_nowait()
                        if more is None:
                            stop = True
                            break
                        batch.extend(more)
                    self._in_flight[number] = loop.time()
                try:
                    await worker.commit(batch)
                finally:
                    del self._in_flight[number]
                    ended = self._commit_ended
                    if ended is not None and not ended.done():
                        ended.set_result(None)
                if stop:
                    return
        finally:
            await worker.close()

    async def _until_free(self, loop: asyncio.AbstractEventLoop) -> None:
        """Return once no commit is in flight, or the latest one has run SLOW_COMMIT_SECONDS."""
        while self._in_flight:
            remaining = max(self._in_flight.values()) + self._slow - loop.time()
            if remaining <= 0:
                return
            ended = self._commit_ended = loop.create_future()
            timer = loop.call_later(remaining, _settle, ended)
            try:
                await ended
            finally:
                timer.cancel()

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def resolver(self) -> Resolver:
        return self._resolver

    @property
    def kinds(self) -> ErrorKinds:
        return self._kinds

    @property
    def conninfo(self) -> str:
        return self._conninfo

    @property
    def timeout_ms(self) -> int:
        """lock_timeout and statement_timeout of the batch connections, in milliseconds."""
        return self._timeout_ms


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Worker:
    """One worker task's connection and its way of committing a batch."""

    def __init__(self, batches: PostgresBatches) -> None:
        self._batches = batches
        self._connection: Connection | None = None

    async def commit(self, batch: list[Waiting]) -> None:
        kinds = self._batches.kinds
        try:
            results = await self._record([w.delivery for w in batch])
        except Exception as exc:  # noqa: BLE001 - whatever it is, nobody may get a 2xx
            if kinds.connectivity(exc):
                await self.close()
            if not kinds.refused_row(exc) or len(batch) == 1:
                self._batches.resolver.failed(batch, exc)
                return
            log.error("inbox.batch_refused", size=len(batch), error=type(exc).__name__)
            for waiting in batch:
                await self.commit([waiting])
            return
        self._batches.resolver.committed(batch, results)

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.closed:
            with contextlib.suppress(Exception):  # it is being thrown away anyway
                await connection.close()

    async def _record(self, deliveries: list[InboundDelivery]) -> list[Recorded]:
        plan = plan_batch(deliveries)
        try:
            inserted, collided = await insert_originals_async(await self._open(), plan.originals)
        except Exception as exc:
            if not self._batches.kinds.connectivity(exc):
                raise
            log.warning("inbox.reconnecting", error=type(exc).__name__)
            await self.close()
            inserted, collided = await insert_originals_async(await self._open(), plan.originals)
        conflicted: dict[tuple[str, str], int] = {}
        rest = [*collided, *plan.others]
        if rest:
            conflicted = await asyncio.to_thread(self._record_others, deliveries, rest)
        return outcomes(deliveries, plan, inserted, conflicted)

    async def _open(self) -> Connection:
        """The worker's connection, opened (again) when it has none or lost it."""
        if self._connection is None or self._connection.closed:
            connection = await psycopg.AsyncConnection.connect(
                self._batches.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            )
            # Autocommit: each statement is its own transaction, so a session-wide setting is
            # what SET LOCAL would be on each of them. Past it the batch fails: 503, retried.
            timeout = f"{self._batches.timeout_ms}ms"
            await connection.execute(
                "SELECT set_config('lock_timeout', %s, false), "
                "set_config('statement_timeout', %s, false)",
                (timeout, timeout),
            )
            self._connection = connection
        return self._connection

    def _record_others(
        self, deliveries: list[InboundDelivery], rows: list[Any]
    ) -> dict[tuple[str, str], int]:
        """Duplicates and other bodies, with their alerts, in one ordinary transaction."""
        with self._batches.engine.begin() as connection:
            timeout = f"{self._batches.timeout_ms}ms"
            connection.exec_driver_sql(
                "SELECT set_config('lock_timeout', %(t)s, true), "
                "set_config('statement_timeout', %(t)s, true)",
                {"t": timeout},
            )
            return record_others(connection, deliveries, rows)
