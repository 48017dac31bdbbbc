"""Deferred work: finality timers, inbound postings, webhook deliveries and their retries.

Everything that "happens later" is a job due at a clock instant. Tests drive it step by step
with ``run_due`` (deterministic, inline); a server runs a background thread that does the same
on a short tick and hands HTTP deliveries to a small thread pool so that a slow receiver never
holds up the ledger.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from sandbox.clock import Clock

Lane = Literal["core", "io"]
Job = Callable[[], None]

_log = logging.getLogger("sandbox.scheduler")
_MAX_INLINE_STEPS = 1_000_000


class Scheduler:
    """Two heaps of (due_ms, seq, job): ``core`` mutates state, ``io`` does network I/O."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._heaps: dict[Lane, list[tuple[int, int, Job]]] = {"core": [], "io": []}

    def at(self, due_ms: int, job: Job, lane: Lane = "core") -> None:
        with self._lock:
            heapq.heappush(self._heaps[lane], (due_ms, next(self._seq), job))

    def after(self, seconds: float, job: Job, lane: Lane = "core") -> None:
        self.at(self._clock.now_ms() + round(seconds * 1000), job, lane)

    def pop_due(self, lane: Lane, now_ms: int | None) -> Job | None:
        """The next job due by ``now_ms`` (``None`` = everything, however far ahead)."""
        with self._lock:
            heap = self._heaps[lane]
            if heap and (now_ms is None or heap[0][0] <= now_ms):
                return heapq.heappop(heap)[2]
            return None

    def pending(self, lane: Lane | None = None) -> int:
        with self._lock:
            if lane is None:
                return sum(len(h) for h in self._heaps.values())
            return len(self._heaps[lane])

    def clear(self) -> None:
        with self._lock:
            for heap in self._heaps.values():
                heap.clear()

    def run_due(self, *, everything: bool = False) -> int:
        """Run, inline, every job due now, including jobs those jobs make due; count them.

        Core jobs go first each round so that an event is recorded before its delivery runs.
        With ``everything`` the clock is ignored: all pending work runs (used by ``settle_now``).
        """
        ran = 0
        while ran < _MAX_INLINE_STEPS:
            now = None if everything else self._clock.now_ms()
            job = self.pop_due("core", now) or self.pop_due("io", now)
            if job is None:
                return ran
            _run(job)
            ran += 1
        return ran


def _run(job: Job) -> None:
    try:
        job()
    except Exception:  # noqa: BLE001 - a failing job must not stop the sandbox
        _log.exception("sandbox job failed")


class BackgroundRunner:
    """A daemon thread ticking the scheduler; io jobs go to a thread pool."""

    def __init__(self, scheduler: Scheduler, clock: Clock, tick: float, workers: int) -> None:
        self._scheduler = scheduler
        self._clock = clock
        self._tick = tick
        self._workers = workers
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="sandbox-delivery")
        self._thread = threading.Thread(target=self._loop, name="sandbox-runner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = self._clock.now_ms()
            while (job := self._scheduler.pop_due("core", now)) is not None:
                _run(job)
            pool = self._pool
            while pool is not None and (job := self._scheduler.pop_due("io", now)) is not None:
                try:
                    pool.submit(_run, job)
                except RuntimeError:  # pool shut down under us: stopping
                    return
            self._stop.wait(self._tick)
