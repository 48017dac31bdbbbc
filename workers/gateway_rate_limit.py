"""One request rate towards the gateway, shared by every worker thread, process and machine.

Dramatiq's WindowRateLimiter counts requests in one-second buckets on a shared backend (Redis
when REDIS_URL is set, in-process otherwise), so all workers together stay under
RECON_GATEWAY_RPS. It is applied as an httpx transport around the gateway client's real one:
every request, retries included, takes a slot first, whichever actor sends it.

A request that finds no slot waits (polling the limiter with a little jitter) up to
`MAX_WAIT_SECONDS`, then fails as a pool timeout, which the upstream client reports as
"the gateway could not be reached" and knows was never sent. If the limiter's backend is
unreachable (Redis down), requests go ahead unthrottled and a warning is logged: the gateway's
own 429s still protect it, and stopping all polling because a counter is down would be worse.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx
import structlog
from dramatiq.rate_limits import WindowRateLimiter
from dramatiq.rate_limits.backends import RedisBackend, StubBackend

from workers.middleware.metrics import RATE_LIMIT_WAIT

#: The limiter's key in the backend: one budget for the whole deployment.
LIMITER_KEY: Final = "recon:gateway-requests"

#: Longest a request waits for a slot before giving up (it was never sent, so it is safe).
MAX_WAIT_SECONDS: Final = 60.0

#: Longest sleep between two tries for a slot.
POLL_SECONDS: Final = 0.05

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Window:
    """How a requests-per-second figure maps onto whole-second windows and integer limits."""

    limit: int
    seconds: int

    @classmethod
    def for_rate(cls, per_second: float) -> Window:
        """0.5/s -> 1 per 2 s; 50/s -> 50 per 1 s; 12.5/s -> 25 per 2 s (never above the rate)."""
        if per_second <= 0:
            raise ValueError("the gateway request rate must be > 0")
        seconds = max(1, math.ceil(1 / per_second))
        limit = math.floor(per_second * seconds)
        if per_second * seconds != limit and per_second < 100:
            seconds = max(seconds, 2)
            limit = math.floor(per_second * seconds)
        return cls(limit=max(1, limit), seconds=seconds)


def build_limiter(redis_url: str | None, per_second: float) -> WindowRateLimiter:
    """The shared limiter: on Redis when configured, in-process otherwise."""
    backend: Any = RedisBackend(url=redis_url) if redis_url else StubBackend()  # type: ignore[no-untyped-call]
    window = Window.for_rate(per_second)
    return WindowRateLimiter(  # type: ignore[no-untyped-call]
        backend, LIMITER_KEY, limit=window.limit, window=window.seconds
    )


class RateLimitedTransport(httpx.BaseTransport):
    """An httpx transport that takes a slot from the limiter before each request."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        limiter: WindowRateLimiter,
        *,
        max_wait: float = MAX_WAIT_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._inner = inner
        self._limiter = limiter
        self._max_wait = max_wait
        self._sleep = sleep
        self._rng = random.Random()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Wait for a slot, then send."""
        self.wait_for_slot(request)
        return self._inner.handle_request(request)

    def wait_for_slot(self, request: httpx.Request | None = None) -> float:
        """Block until the limiter grants a slot; returns the seconds waited."""
        started = time.monotonic()
        while True:
            try:
                with self._limiter.acquire(raise_on_failure=False) as acquired:
                    if acquired:
                        waited = time.monotonic() - started
                        RATE_LIMIT_WAIT.observe(waited)
                        return waited
            except Exception as exc:  # noqa: BLE001 - a broken limiter must not stop polling
                log.warning("gateway_rate_limit.unavailable", error=type(exc).__name__)
                return time.monotonic() - started
            waited = time.monotonic() - started
            if waited >= self._max_wait:
                raise httpx.PoolTimeout(
                    f"no gateway request slot within {self._max_wait:g}s under the shared rate "
                    "limit (RECON_GATEWAY_RPS); the request was not sent",
                    request=request,
                )
            self._sleep(self._rng.uniform(POLL_SECONDS / 5, POLL_SECONDS))

    def close(self) -> None:
        """Close the wrapped transport."""
        self._inner.close()
