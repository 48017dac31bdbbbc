"""Wrong admin tokens counted per client, and the client slowed once it sends too many.

Both ways in with the admin token (the console's sign-in form and the API's bearer check)
count a wrong token against the client that sent it, in one budget per client per minute
(RECON_AUTH_FAILURES_PER_MINUTE). Past it, every try from that client is answered 429 with
Retry-After until the minute is over, the right token included: otherwise the answer to a
guess would still say whether it was right. With Redis configured the counts live there, so
every web process shares them; without it (the embedded default: one web process) they live
in this process. Should Redis stop answering, the process counts on its own rather than let
every guess through or lock everyone out.

Each client's first wrong token in a minute is logged once (`auth.refused`, with its address
and where it tried); the rest are counted in `recon_admin_token_refusals_total`, so a flood
of guesses costs the log one line a minute per client.

A client is the peer address uvicorn reports: behind a reverse proxy on this machine that is
the address the proxy forwards (uvicorn trusts X-Forwarded-For from 127.0.0.1 only).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

import structlog
from litestar.connection import ASGIConnection

from app import metrics

#: Seconds of one counting window.
WINDOW_SECONDS: Final = 60
#: Redis key prefix of a client's count for one window.
KEY_PREFIX: Final = "recon:auth-refusals"
#: Seconds a Redis call may take before this process counts on its own instead.
REDIS_TIMEOUT_SECONDS: Final = 0.5

log = structlog.get_logger(__name__)


def client_of(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    """The client's address as uvicorn reports it."""
    return connection.client.host if connection.client else "unknown"


class AuthFailureLimiter:
    """Per-client counts of wrong admin tokens, in Redis when configured, else in process."""

    def __init__(
        self, limit: int, redis_url: str | None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._limit = limit
        self._clock = clock
        self._redis: Any = None
        if redis_url is not None:
            import redis.asyncio

            self._redis = redis.asyncio.Redis.from_url(
                redis_url,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            )
        self._local: dict[tuple[str, int], int] = {}
        self._local_window = -1
        self._redis_failed_window = -1

    async def retry_after(self, client: str) -> int | None:
        """Seconds `client` must wait before its next try, or None when it may try now."""
        window, left = self._window()
        if await self._count(client, window) < self._limit:
            return None
        return left

    async def refused(self, client: str, surface: str) -> None:
        """Count one wrong token from `client` at `surface` (`console` or `api`)."""
        window, _ = self._window()
        count = await self._add(client, window)
        metrics.ADMIN_TOKEN_REFUSALS.labels(surface).inc()
        if count == 1:
            log.warning(
                "auth.refused",
                client=client,
                surface=surface,
                detail="wrong admin token; further ones from this client this minute are "
                f"counted in recon_admin_token_refusals_total, and past {self._limit} "
                "answered 429",
            )

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()

    def _window(self) -> tuple[int, int]:
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        return window, max(1, int((window + 1) * WINDOW_SECONDS - now + 0.999))

    async def _count(self, client: str, window: int) -> int:
        if self._redis is not None:
            try:
                found = await self._redis.get(f"{KEY_PREFIX}:{window}:{client}")
                return int(found or 0)
            except Exception as exc:  # noqa: BLE001 - any Redis failure: count locally
                self._redis_failed(exc)
        return self._local.get((client, window), 0)

    async def _add(self, client: str, window: int) -> int:
        if self._redis is not None:
            key = f"{KEY_PREFIX}:{window}:{client}"
            try:
                async with self._redis.pipeline(transaction=True) as pipe:
                    pipe.incr(key)
                    pipe.expire(key, 2 * WINDOW_SECONDS)
                    count, _ = await pipe.execute()
                return int(count)
            except Exception as exc:  # noqa: BLE001 - any Redis failure: count locally
                self._redis_failed(exc)
        if window != self._local_window:
            # A new minute: the old counts can no longer refuse anyone.
            self._local.clear()
            self._local_window = window
        count = self._local.get((client, window), 0) + 1
        self._local[(client, window)] = count
        return count

    def _redis_failed(self, exc: Exception) -> None:
        """Say so once a minute at most: Redis down must not become a log flood."""
        window, _ = self._window()
        if window != self._redis_failed_window:
            self._redis_failed_window = window
            log.warning("auth.limit_store_unavailable", error=type(exc).__name__)
