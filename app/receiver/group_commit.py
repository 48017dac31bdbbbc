"""Group commit: deliveries are committed in batches, and each request waits for its batch.

One commit per request spends a round trip and a WAL flush on every delivery; committing
everything that arrived meanwhile at once spends them on the whole batch, and batches grow
exactly when load does. Each request still waits for *its* batch to commit before it hears
anything (invariant 1, docs/architecture.md): the future it awaits is resolved only after the commit returned, and a
failed commit fails every request of the batch (503, the provider retries).

Requests hand their deliveries over once per event-loop iteration, not one by one: every
delivery that reached the writer during one iteration goes to the database back end as one
list. The back end depends on the database: tasks in the event loop with the asyncio driver on
PostgreSQL (app.receiver.postgres_batches), a writer thread on SQLite
(app.receiver.thread_batches).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Final

from sqlalchemy import Engine

from app.receiver.batches import Backend, InboxUnavailableError, Resolver, Waiting
from app.receiver.deadlines import TaskDeadlines
from app.receiver.postgres_batches import PostgresBatches
from app.receiver.thread_batches import ThreadBatches
from reconciliation.notifications import InboundDelivery, Recorded

#: Seconds `stop` waits for queued deliveries to be committed before failing them.
STOP_TIMEOUT_SECONDS: Final = 15.0

#: Seconds a request waits for its batch's commit unless told otherwise: past it the sender
#: hears 503 and retries, rather than holding its connection while a lock is held.
COMMIT_TIMEOUT_SECONDS: Final = 10.0

__all__ = ["STOP_TIMEOUT_SECONDS", "GroupCommitWriter", "InboxUnavailableError"]


class GroupCommitWriter:
    """Gathers deliveries per event-loop iteration; `write` returns once its batch committed."""

    def __init__(
        self,
        engine: Engine,
        *,
        on_committed: Callable[[Sequence[int]], None] | None,
        backend: Backend | None = None,
        commit_timeout: float = COMMIT_TIMEOUT_SECONDS,
    ) -> None:
        resolver = Resolver(on_committed)
        self._backend: Backend = backend or (
            PostgresBatches(engine, resolver, statement_timeout=commit_timeout)
            if engine.dialect.name == "postgresql"
            else ThreadBatches(engine, resolver)
        )
        self._deadlines = TaskDeadlines(commit_timeout)
        self._resolver = resolver
        self._running = False
        # Deliveries of the current loop iteration, per event loop (only that loop touches them).
        self._gathering: dict[asyncio.AbstractEventLoop, list[Waiting]] = {}

    async def start(self) -> None:
        """Start the back end (in the app's event loop); idempotent."""
        if not self._running:
            await self._backend.start()
            self._running = True

    async def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Commit what is queued, then stop; later writes are refused with InboxUnavailableError.

        Anything that could not be committed in time is failed (503) rather than left waiting.
        """
        if not self._running:
            return
        self._running = False
        for loop in list(self._gathering):
            self._hand_over(loop)
        leftover = await self._backend.stop(timeout)
        leftover.extend(w for gathered in self._gathering.values() for w in gathered)
        self._gathering.clear()
        if leftover:
            self._resolver.failed(leftover, InboxUnavailableError("stopped before the commit"))

    async def write(self, delivery: InboundDelivery) -> Recorded:
        """Queue one delivery and return once the batch holding it has committed.

        Raises InboxUnavailableError when the commit failed, or did not complete within the
        commit timeout. A batch that commits after its request gave up is kept (the rows are
        stored and enqueued); the sender, told 503, retries and hears "duplicate".
        """
        if not self._running:
            raise InboxUnavailableError("the inbox writer is not running (the process is stopping)")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Recorded] = loop.create_future()
        gathering = self._gathering.get(loop)
        if gathering is None:
            gathering = self._gathering[loop] = []
            loop.call_soon(self._hand_over, loop)
        gathering.append(Waiting(delivery, future, loop, time.perf_counter()))
        deadline = self._deadlines.arm()
        try:
            return await future
        except asyncio.CancelledError:
            if not self._deadlines.expired(deadline):
                raise
            raise InboxUnavailableError(
                f"the store did not commit within {self._deadlines.seconds:g} s "
                "(RECON_WEBHOOK_COMMIT_TIMEOUT_SECONDS)"
            ) from None
        finally:
            self._deadlines.disarm(deadline)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give the back end everything this loop gathered during the iteration, as one list."""
        gathered = self._gathering.pop(loop, None)
        if gathered:
            self._backend.submit(gathered)
