"""Hands committed delivery ids to the process's `enqueue`, off the request path.

The 2xx has already been decided by the commit; enqueueing is a hint that makes processing
prompt, not a condition of it. So it runs in its own thread (a slow broker never holds up a
response or the next commit), ids committed meanwhile are sent together, and a failure is only
counted, and logged once per outage: the workers' sweeper re-enqueues pending rows a lost message left behind.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Final

import structlog

from app import metrics
from foundation import OutageLog

#: Most ids passed to one `enqueue` call.
MAX_IDS_PER_CALL: Final = 500

log = structlog.get_logger(__name__)

Enqueue = Callable[[Sequence[int]], None]


class EnqueueRelay:
    """A thread that calls `enqueue` with the row ids of committed deliveries."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue
        # A broker outage fails every call: one line when it starts, one when it ends.
        self._outage = OutageLog(log, "inbox.enqueue_failed", "inbox.enqueue_recovered")
        self._queue: queue.SimpleQueue[Sequence[int] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the relay thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="enqueue-relay", daemon=True)
            self._thread.start()

    def submit(self, row_ids: Sequence[int]) -> None:
        """Queue ids for enqueueing; never blocks, never raises."""
        self._queue.put(row_ids)

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued, then stop."""
        thread = self._thread
        if thread is None:
            return
        self._queue.put(None)
        thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            ids = list(first)
            stop_after = False
            while len(ids) < MAX_IDS_PER_CALL:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop_after = True
                    break
                ids.extend(more)
            self._send(ids)
            if stop_after:
                return

    def _send(self, ids: list[int]) -> None:
        try:
            self._enqueue(ids)
        except Exception as exc:  # noqa: BLE001 - a lost enqueue is the sweeper's job, not a crash
            metrics.ENQUEUE_FAILURES.inc()
            self._outage.failed(
                exc,
                items=len(ids),
                first_row_id=ids[0],
                recovery="the rows stay pending; the workers' sweeper will enqueue them",
            )
        else:
            self._outage.succeeded()
