"""Batches committed by writer threads with the synchronous driver (SQLite).

SQLite writes in-process and one writer at a time, so one thread serves: it takes everything
handed over while its previous commit ran and commits it in one transaction. Its connection is
its own (no pool checkout per batch); a lost connection is retried once on a fresh one, and a
batch the database refuses for another reason is retried one delivery at a time, so one bad row
cannot take its neighbours down with it.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time

import structlog
from sqlalchemy import Connection, Engine

from app.receiver.batches import MAX_BATCH, ErrorKinds, Resolver, Waiting
from reconciliation.notifications import (
    InboundDelivery,
    Recorded,
    record_deliveries,
    use_statement_commits,
)

log = structlog.get_logger(__name__)


class ThreadBatches:
    """Writer threads, each committing whole batches on a connection of its own."""

    def __init__(self, engine: Engine, resolver: Resolver, *, threads: int = 1) -> None:
        self._engine = engine
        self._resolver = resolver
        self._count = threads
        self._queue: queue.SimpleQueue[list[Waiting] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    async def start(self) -> None:
        for number in range(self._count):
            thread = threading.Thread(
                target=_Writer(self).run, name=f"inbox-writer-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def submit(self, batch: list[Waiting]) -> None:
        self._queue.put(batch)

    async def stop(self, timeout: float) -> list[Waiting]:
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            await asyncio.to_thread(thread.join, max(0.0, deadline - time.monotonic()))
        self._threads.clear()
        leftover: list[Waiting] = []
        while True:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                return leftover
            leftover.extend(more or ())

    def next_batch(self) -> tuple[list[Waiting], bool]:
        """Block for a batch, then take whatever else is queued; True means stop after."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch = list(first)
        while len(batch) < MAX_BATCH:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None:
                return batch, True
            batch.extend(more)
        return batch, False

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def resolver(self) -> Resolver:
        return self._resolver


class _Writer:
    """One writer thread's loop and its own database connection."""

    def __init__(self, batches: ThreadBatches) -> None:
        self._batches = batches
        self._connection: Connection | None = None
        self._kinds = ErrorKinds(batches.engine)

    def run(self) -> None:
        try:
            while True:
                batch, stop = self._batches.next_batch()
                if batch:
                    self._commit(batch)
                if stop:
                    return
        finally:
            self._drop_connection()

    def _commit(self, batch: list[Waiting]) -> None:
        try:
            results = self._record([w.delivery for w in batch])
        except Exception as exc:  # noqa: BLE001 - whatever it is, nobody may get a 2xx
            if not self._kinds.refused_row(exc) or len(batch) == 1:
                self._batches.resolver.failed(batch, exc)
                return
            log.error("inbox.batch_refused", size=len(batch), error=type(exc).__name__)
            for waiting in batch:
                self._commit([waiting])
            return
        self._batches.resolver.committed(batch, results)

    def _record(self, deliveries: list[InboundDelivery]) -> list[Recorded]:
        try:
            return self._record_once(deliveries)
        except Exception as exc:
            if not self._kinds.connectivity(exc):
                raise
            log.warning("inbox.reconnecting", error=type(exc).__name__)
            self._drop_connection()
            return self._record_once(deliveries)

    def _record_once(self, deliveries: list[InboundDelivery]) -> list[Recorded]:
        connection = self._connection
        if connection is None or connection.invalidated or connection.closed:
            self._drop_connection()
            connection = self._connection = self._batches.engine.connect()
            use_statement_commits(connection)
        if connection.dialect.name == "postgresql":
            # Each statement commits by itself: a batch of new deliveries is one round trip.
            return record_deliveries(connection, deliveries)
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
