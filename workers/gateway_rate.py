"""The gateway rate in use: RECON_GATEWAY_RPS, lowered by the provider's 429s, climbing back.

RECON_GATEWAY_RPS is what the provider is believed to grant; a 429 says it grants less right
now (a shared quota, a provider under load). Every worker then slows down together: the rate
in use halves (at most once per `LOWER_GUARD_SECONDS`, so one burst of 429s answering requests
already in flight counts once), never below `FLOOR_SHARE` of the configured rate, and no
request is sent before the 429's Retry-After has passed. Without further 429s the rate climbs
back by `CLIMB_SHARE` of the configured rate every `CLIMB_SECONDS`, up to the configured rate.

The state is three numbers (the rate a 429 lowered to, when, and the pause's end), shared
through Redis when REDIS_URL is set (one key for the deployment, as the limiter's), in process
otherwise. The rate in use is computed from them on each request, so recovery needs no timer;
it is the `recon_worker_gateway_rate_per_second` gauge.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Final, Protocol

import structlog

#: The key of the shared state in Redis (a hash: lowered_to, lowered_at, paused_until).
STATE_KEY: Final = "recon:gateway-rate"

#: The lowest share of the configured rate a 429 storm lowers to: polling slows, never stops.
FLOOR_SHARE: Final = 0.05

#: A 429 within this long of the last lowering is the same storm (answers to requests sent
#: before the rate fell), not a reason to halve again.
LOWER_GUARD_SECONDS: Final = 1.0

#: Recovery: this share of the configured rate back every this many seconds without a 429
#: (from the floor to the full rate in under three minutes).
CLIMB_SHARE: Final = 0.1
CLIMB_SECONDS: Final = 15.0

#: The longest pause a Retry-After may impose: a provider naming an hour is capped, and the
#: next 429 pauses again.
MAX_PAUSE_SECONDS: Final = 300.0

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class RateState:
    """What 429s left behind: the rate lowered to (None: never lowered) and when, and the
    moment before which no request goes out (epoch seconds)."""

    lowered_to: float | None = None
    lowered_at: float = 0.0
    paused_until: float = 0.0


def rate_in_use(configured: float, state: RateState, now: float) -> float:
    """The requests per second to use at `now`: the lowered rate, climbed since, capped."""
    if state.lowered_to is None:
        return configured
    steps = max(0, math.floor((now - state.lowered_at) / CLIMB_SECONDS))
    return min(configured, state.lowered_to + steps * CLIMB_SHARE * configured)


def after_429(configured: float, state: RateState, now: float, retry_after: float) -> RateState:
    """The state after a 429 at `now` asking to wait `retry_after` seconds."""
    paused_until = max(state.paused_until, now + min(max(retry_after, 0.0), MAX_PAUSE_SECONDS))
    if state.lowered_to is not None and now - state.lowered_at < LOWER_GUARD_SECONDS:
        return RateState(state.lowered_to, state.lowered_at, paused_until)
    lowered = max(FLOOR_SHARE * configured, rate_in_use(configured, state, now) / 2)
    return RateState(lowered, now, paused_until)


class RateStateStore(Protocol):
    """Where the state lives: read it, and apply a 429 to it (atomically across workers)."""

    def read(self) -> RateState: ...

    def lower(self, configured: float, now: float, retry_after: float) -> RateState: ...


class LocalRateState:
    """In-process state (no REDIS_URL: one process, its threads)."""

    def __init__(self) -> None:
        self._state = RateState()
        self._lock = threading.Lock()

    def read(self) -> RateState:
        return self._state

    def lower(self, configured: float, now: float, retry_after: float) -> RateState:
        with self._lock:
            self._state = after_429(configured, self._state, now, retry_after)
            return self._state


class RedisRateState:
    """The state in one Redis hash, changed under WATCH so two workers' 429s both count."""

    def __init__(self, client: Any, key: str = STATE_KEY) -> None:
        self._client = client
        self._key = key

    def read(self) -> RateState:
        return _decode(self._client.hgetall(self._key))

    def lower(self, configured: float, now: float, retry_after: float) -> RateState:
        with self._client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(self._key)
                    state = after_429(
                        configured, _decode(pipe.hgetall(self._key)), now, retry_after
                    )
                    pipe.multi()
                    pipe.hset(
                        self._key,
                        mapping={
                            "lowered_to": repr(state.lowered_to),
                            "lowered_at": repr(state.lowered_at),
                            "paused_until": repr(state.paused_until),
                        },
                    )
                    # Gone once fully recovered, whatever happens to the workers.
                    pipe.expire(self._key, _recovered_within(configured))
                    pipe.execute()
                    return state
                except _watch_error():
                    continue


def _recovered_within(configured: float) -> int:
    """Seconds after a lowering by which the rate is back to the configured one, with margin."""
    del configured  # the climb is a share of it, so the time does not depend on it
    steps = math.ceil((1 - FLOOR_SHARE) / CLIMB_SHARE) + 1
    return int(steps * CLIMB_SECONDS + MAX_PAUSE_SECONDS)


def _watch_error() -> type[Exception]:
    from redis.exceptions import WatchError

    return WatchError


def _decode(raw: dict[Any, Any]) -> RateState:
    if not raw:
        return RateState()
    fields = {
        (k.decode() if isinstance(k, bytes) else str(k)): (
            v.decode() if isinstance(v, bytes) else str(v)
        )
        for k, v in raw.items()
    }
    try:
        lowered = fields.get("lowered_to", "None")
        return RateState(
            lowered_to=None if lowered == "None" else float(lowered),
            lowered_at=float(fields.get("lowered_at", "0")),
            paused_until=float(fields.get("paused_until", "0")),
        )
    except ValueError:
        log.warning("gateway_rate.unreadable_state", key=STATE_KEY)
        return RateState()
