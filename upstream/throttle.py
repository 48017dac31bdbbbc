"""Client-side pacing: stay under the provider's rate limit instead of bouncing off it.

A 429 costs a round trip and a Retry-After wait; pacing our own requests (RECON_GATEWAY_RPS)
avoids most of them when many worker threads share one client. The algorithm is GCRA, the
"virtual scheduling" form of a token bucket: each request reserves the next free slot under a
lock and then sleeps outside it, so threads are served in arrival order without a busy loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Throttle:
    """At most `rate` requests per second on average, with bursts of up to `burst`."""

    def __init__(
        self,
        rate: float,
        burst: int = 1,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self._interval = 1.0 / rate
        self._tolerance = (burst - 1) * self._interval
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tat = 0.0  # theoretical arrival time of the next request

    def acquire(self) -> float:
        """Wait for this request's slot; return the seconds waited."""
        with self._lock:
            now = self._clock()
            tat = max(self._tat, now)
            wait = max(0.0, tat - self._tolerance - now)
            self._tat = tat + self._interval
        if wait > 0:
            self._sleep(wait)
        return wait
