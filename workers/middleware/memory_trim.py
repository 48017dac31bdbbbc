"""Give memory freed by a message back to the system, so a peak does not stay in the RSS.

glibc's malloc keeps what Python frees: a reconciliation pass or a catch-up batch that peaks at
a few hundred megabytes leaves the worker's RSS there, and every later, slightly higher peak
(more threads busy at once, a larger batch) raises it a little more. A two-hour soak measured the
worker growing +14.3 MB/h while its Python heap stayed flat. `malloc_trim(0)` hands every whole
free page of every arena back (madvise), at the cost of a walk over the arenas' free lists.

So after a message this middleware trims, at most once per `TRIM_INTERVAL_SECONDS`: the first
message to end past the interval trims for every message before it (a pass, a catch-up batch,
an audit, and all the small ones). Only where the C library has `malloc_trim` (glibc); on musl,
macOS and elsewhere it does nothing. `MALLOC_ARENA_MAX` (docs/deploy.md) bounds how many arenas
there are to keep memory in at all.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from dramatiq import Broker, Middleware
from dramatiq.broker import MessageProxy
from prometheus_client import Counter, Histogram

from workers.middleware.metrics import REGISTRY

#: Seconds between trims. A trim madvises every free chunk of every arena, under each arena's
#: lock (other threads' allocations there wait): over a heap fragmented on purpose (8 threads'
#: arenas, 300,000 free chunks) it took 60 to 270 ms on the 2-core machine, every time, since
#: pages already given back are advised again. One per 10 s keeps that worst case near 1% of a
#: core; a peak's pages still go back within seconds, and the goal is megabytes an hour.
TRIM_INTERVAL_SECONDS: Final = 10.0

#: Trims done, by whether the C library gave any memory back.
TRIMS: Final = Counter(
    "recon_worker_memory_trims",
    "malloc_trim(0) calls after worker messages, by whether memory went back to the system.",
    ["released"],
    registry=REGISTRY,
)
#: Time each trim took (its cost, to weigh against TRIM_INTERVAL_SECONDS).
TRIM_SECONDS: Final = Histogram(
    "recon_worker_memory_trim_seconds",
    "Time one malloc_trim(0) took.",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
    registry=REGISTRY,
)


def _find_malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the process's C library has none."""
    try:
        # The process's own symbols: whichever C library it runs on. Windows has no such handle.
        libc = ctypes.CDLL(None)
    except (OSError, TypeError):
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


#: Looked up once: None on musl, macOS and other C libraries without it.
_MALLOC_TRIM: Final = _find_malloc_trim()


def can_trim() -> bool:
    """Whether this process's C library can give freed memory back (`malloc_trim`)."""
    return _MALLOC_TRIM is not None


def release_free_memory() -> bool | None:
    """Hand every whole free page of the C heap back to the system; whether any went back
    (None: the C library cannot, nothing was done)."""
    if _MALLOC_TRIM is None:
        return None
    with TRIM_SECONDS.time():
        released = bool(_MALLOC_TRIM(0))
    TRIMS.labels("yes" if released else "no").inc()
    return released


class MemoryTrim(Middleware):
    """After a message, `release_free_memory` if the last trim began `interval` seconds ago."""

    def __init__(self, interval: float = TRIM_INTERVAL_SECONDS) -> None:
        self._interval = interval
        self._last_trim = float("-inf")
        # One trim at a time: another thread's trim in progress covers this message too.
        self._trimming = threading.Lock()

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        if not can_trim() or time.monotonic() - self._last_trim < self._interval:
            return
        # Another thread trimming now covers this message's memory, or nearly: skip rather
        # than wait and walk the arenas twice.
        if not self._trimming.acquire(blocking=False):
            return
        try:
            # Checked again under the lock: a thread that trimmed meanwhile has covered this.
            if time.monotonic() - self._last_trim >= self._interval:
                self._last_trim = time.monotonic()
                release_free_memory()
        finally:
            self._trimming.release()
