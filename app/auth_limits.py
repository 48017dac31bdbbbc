"""Wrong admin tokens counted per client, and the client slowed once it sends too many.

Both ways in with the admin token (the console's sign-in form and the API's bearer check)
count a try against the client that sent it, in one budget per client per window of a minute
(RECON_AUTH_FAILURES_PER_MINUTE). The count is taken before the token is compared: each offered
token first reserves a place in the budget, atomically (one Redis script, or one step of this
process's event loop), and only a try whose place is within the budget is compared at all. A
right token gives its place back; a wrong one keeps it. Checking first and counting after let
28 simultaneous guesses through against a budget of 10, since all were checked before any was
counted. Past the budget every try is answered 429 with Retry-After until the client's window
is over, the right token included: otherwise the answer to a guess would still say whether it
was right.

A client's window starts at its first try and lasts a minute (not a minute of the wall clock,
so a burst is never split in two budgets by a boundary); the clock is the limiter's own
(`clock`), so a test moves it instead of sleeping. With Redis configured the counts live there,
so every web process shares them; without it (the embedded default: one web process) they live
in this process. Should Redis stop answering, the process counts on its own rather than let
every guess through or lock everyone out.

Each try is counted against every address it came from (app.client_addresses): its client
and, behind a trusted proxy, the proxy too, so a proxy that passes a client's X-Forwarded-For
through does not give each guess a fresh budget. Each client's first wrong token in a window is
logged once (`auth.refused`); the rest are counted in `recon_admin_token_refusals_total`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import structlog

from app import metrics

#: Seconds of one client's counting window, from its first try.
WINDOW_SECONDS: Final = 60
#: Redis key prefix of a client's count.
KEY_PREFIX: Final = "recon:auth-tries"
#: Seconds a Redis call may take before this process counts on its own instead.
REDIS_TIMEOUT_SECONDS: Final = 0.5

#: One client's count moved by ARGV[2] (+1 to reserve, -1 to give back) in the window that
#: holds ARGV[1] (the limiter's clock): a window over is started again at ARGV[1] by a
#: reservation and left alone by a give-back. Answers the count and the window's end. One
#: script, so reading and moving the count are one atomic step for every web process.
_MOVE_SCRIPT: Final = """
local now = tonumber(ARGV[1])
local ends = tonumber(redis.call('HGET', KEYS[1], 'ends') or '0')
if ends <= now then
  if tonumber(ARGV[2]) < 0 then return {0, tostring(now)} end
  ends = now + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'ends', tostring(ends), 'n', 0)
end
local n = redis.call('HINCRBY', KEYS[1], 'n', ARGV[2])
redis.call('EXPIRE', KEYS[1], 2 * tonumber(ARGV[3]))
return {n, tostring(ends)}
"""

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One offered token's place in its clients' budgets."""

    clients: tuple[str, ...]
    #: Each client's count once this try was counted, in the order of `clients`.
    counts: tuple[int, ...]
    #: Seconds until the fullest window is over.
    seconds_left: int
    limit: int

    @property
    def retry_after(self) -> int | None:
        """Seconds to wait before trying again, or None when this try is within every budget."""
        return self.seconds_left if max(self.counts) > self.limit else None


class AuthFailureLimiter:
    """Per-client counts of offered admin tokens, in Redis when configured, else in process."""

    def __init__(
        self, limit: int, redis_url: str | None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._limit = limit
        self._clock = clock
        self._redis: Any = None
        self._move: Any = None
        if redis_url is not None:
            import redis.asyncio

            self._redis = redis.asyncio.Redis.from_url(
                redis_url,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            )
            self._move = self._redis.register_script(_MOVE_SCRIPT)
        #: client -> (count, the end of its window on `clock`).
        self._local: dict[str, tuple[int, float]] = {}
        self._redis_failed_until = float("-inf")

    async def attempt(self, clients: Sequence[str]) -> Attempt:
        """Count one offered token against every one of `clients`, before it is compared."""
        moved = [await self._moved(client, +1) for client in clients]
        now = self._clock()
        over = [ends for count, ends in moved if count > self._limit] or [e for _, e in moved]
        seconds_left = max(1, int(max(over) - now + 0.999))
        return Attempt(tuple(clients), tuple(c for c, _ in moved), seconds_left, self._limit)

    async def retry_after(self, clients: Sequence[str]) -> int | None:
        """Seconds any of `clients` must wait, or None; counts nothing (a request that offers
        no token guesses nothing)."""
        now = self._clock()
        waits = [
            max(1, int(ends - now + 0.999))
            for count, ends in [await self._moved(client, 0) for client in clients]
            if count >= self._limit and ends > now
        ]
        return max(waits) if waits else None

    async def accepted(self, attempt: Attempt) -> None:
        """The token was right: its place goes back to the budget."""
        for client in attempt.clients:
            await self._moved(client, -1)

    def refused(self, attempt: Attempt, surface: str) -> None:
        """The token was wrong at `surface` (`console` or `api`): its place stays taken."""
        metrics.ADMIN_TOKEN_REFUSALS.labels(surface).inc()
        if attempt.counts[0] == 1:
            log.warning(
                "auth.refused",
                client=attempt.clients[0],
                surface=surface,
                detail="wrong admin token; further ones from this client this minute are "
                f"counted in recon_admin_token_refusals_total, and past {self._limit} "
                "answered 429",
            )

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()

    async def _moved(self, client: str, by: int) -> tuple[int, float]:
        """`client`'s count moved by `by` (0: only read), and the end of its window."""
        now = self._clock()
        if self._redis is not None and now >= self._redis_failed_until:
            try:
                if by == 0:
                    found = await self._redis.hmget(f"{KEY_PREFIX}:{client}", "n", "ends")
                    ends = float(found[1] or 0)
                    return (int(found[0] or 0), ends) if ends > now else (0, now)
                count, ends_text = await self._move(
                    keys=[f"{KEY_PREFIX}:{client}"], args=[repr(now), by, WINDOW_SECONDS]
                )
                return int(count), float(ends_text)
            except Exception as exc:  # noqa: BLE001 - any Redis failure: count locally
                self._redis_failed(exc, now)
        return self._moved_locally(client, by, now)

    def _moved_locally(self, client: str, by: int, now: float) -> tuple[int, float]:
        count, ends = self._local.get(client, (0, now))
        if ends <= now:
            if by <= 0:
                self._local.pop(client, None)
                return 0, now
            # Windows over can no longer refuse anyone: forget them all.
            self._local = {c: v for c, v in self._local.items() if v[1] > now}
            count, ends = 0, now + WINDOW_SECONDS
        count = max(0, count + by)
        self._local[client] = (count, ends)
        return count, ends

    def _redis_failed(self, exc: Exception, now: float) -> None:
        """Count locally for a window, and say so once: Redis down must not become a log flood
        (nor cost every request a timeout)."""
        self._redis_failed_until = now + WINDOW_SECONDS
        log.warning("auth.limit_store_unavailable", error=type(exc).__name__)
