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

The rate is the one in use (workers.gateway_rate): a 429 lowers it for every worker, no request
goes out before its Retry-After has passed, and it climbs back while no 429 comes.
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

from upstream import parse_retry_after
from workers.gateway_rate import (
    LocalRateState,
    RateState,
    RateStateStore,
    RedisRateState,
    rate_in_use,
)
from workers.middleware.metrics import RATE_IN_USE, RATE_LIMIT_WAIT

#: The limiter's key in the backend: one budget for the whole deployment.
LIMITER_KEY: Final = "recon:gateway-requests"

#: Longest a request waits for a slot before giving up (it was never sent, so it is safe).
MAX_WAIT_SECONDS: Final = 60.0

#: Longest sleep between two tries for a slot.
POLL_SECONDS: Final = 0.05

#: The gateway's answer when it grants fewer requests than we send.
TOO_MANY_REQUESTS: Final = 429

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


class GatewayLimiter:
    """The shared window limiter at the rate in use (workers.gateway_rate): RECON_GATEWAY_RPS
    until a 429 lowers it; a limiter per window size, all on the one key."""

    def __init__(
        self,
        backend: Any,
        configured: float,
        state: RateStateStore,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.configured = configured
        self._backend = backend
        self._state = state
        self._clock = clock
        self._limiters: dict[Window, WindowRateLimiter] = {}

    def current(self) -> tuple[float, float]:
        """The rate in use now, and the seconds left before a 429's Retry-After has passed."""
        now = self._clock()
        try:
            state = self._state.read()
        except Exception as exc:  # noqa: BLE001 - a broken store must not stop polling
            log.warning("gateway_rate.unavailable", error=type(exc).__name__)
            state = RateState()
        rate = rate_in_use(self.configured, state, now)
        RATE_IN_USE.set(rate)
        return rate, max(0.0, state.paused_until - now)

    def requests_within(self, seconds: float) -> float:
        """Requests the rate in use grants over the next `seconds`, after any 429's pause: what
        a tick may send before the next one (more would only queue in front of it)."""
        rate, paused = self.current()
        return rate * max(0.0, seconds - paused)

    def limiter(self, rate: float) -> WindowRateLimiter:
        """The window limiter for this rate (they share one key, so counts carry over)."""
        window = Window.for_rate(rate)
        found = self._limiters.get(window)
        if found is None:
            found = WindowRateLimiter(  # type: ignore[no-untyped-call]
                self._backend, LIMITER_KEY, limit=window.limit, window=window.seconds
            )
            self._limiters[window] = found
        return found

    def note_429(self, retry_after: float) -> None:
        """A 429 came back: lower the shared rate and pause everyone for its Retry-After."""
        try:
            state = self._state.lower(self.configured, self._clock(), retry_after)
        except Exception as exc:  # noqa: BLE001 - the gateway's 429s still protect it
            log.warning("gateway_rate.unavailable", error=type(exc).__name__)
            return
        if state.lowered_to is not None:
            RATE_IN_USE.set(state.lowered_to)
        log.info(
            "gateway_rate.lowered",
            rate=round(state.lowered_to or self.configured, 3),
            configured=self.configured,
            retry_after=retry_after,
        )


def build_limiter(
    redis_url: str | None, per_second: float, *, clock: Callable[[], float] = time.time
) -> GatewayLimiter:
    """The shared limiter: on Redis when configured, in-process otherwise (`clock`: epoch
    seconds, the same on every worker, for the 429 pause and the climb back)."""
    Window.for_rate(per_second)  # refuses a rate that is no rate
    if redis_url:
        backend: Any = RedisBackend(url=redis_url)
        state: RateStateStore = RedisRateState(backend.client)
    else:
        backend = StubBackend()  # type: ignore[no-untyped-call]
        state = LocalRateState()
    RATE_IN_USE.set(per_second)
    return GatewayLimiter(backend, per_second, state, clock=clock)


class RateLimitedTransport(httpx.BaseTransport):
    """An httpx transport that takes a slot from the limiter before each request, and lowers
    the shared rate when the gateway answers 429."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        limiter: GatewayLimiter,
        *,
        max_wait: float = MAX_WAIT_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._inner = inner
        self.limiter = limiter
        self._max_wait = max_wait
        self._sleep = sleep
        self._rng = random.Random()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Wait for a slot, then send; a 429 lowers the rate for every worker."""
        self.wait_for_slot(request)
        response = self._inner.handle_request(request)
        if response.status_code == TOO_MANY_REQUESTS:
            self.limiter.note_429(
                parse_retry_after(
                    response.headers.get("Retry-After"), sent_at=response.headers.get("Date")
                )
            )
        return response

    def wait_for_slot(self, request: httpx.Request | None = None) -> float:
        """Block until the limiter grants a slot; returns the seconds waited."""
        started = time.monotonic()
        while True:
            try:
                rate, paused = self.limiter.current()
                acquired = False
                if paused <= 0:
                    with self.limiter.limiter(rate).acquire(raise_on_failure=False) as acquired:
                        pass
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
                    "limit (RECON_GATEWAY_RPS, lowered after a 429); the request was not sent",
                    request=request,
                )
            pause = min(paused, self._max_wait - waited) if paused > 0 else 0.0
            self._sleep(max(pause, self._rng.uniform(POLL_SECONDS / 5, POLL_SECONDS)))

    def close(self) -> None:
        """Close the wrapped transport."""
        self._inner.close()
