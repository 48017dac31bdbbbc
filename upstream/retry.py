"""The one retry policy for both provider APIs.

Exponential backoff with full jitter (a random delay between 0 and the exponential cap, so a
fleet of workers that failed together does not retry together), a maximum number of attempts and
a total deadline per call. What is retried:

- 429: always, after the provider's Retry-After (a refused request was not processed), unless
  waiting would cross the call's deadline, in which case RateLimited is raised at once so the
  caller can reschedule;
- connection failures where the request never left (connect errors): always;
- 5xx, read timeouts, dropped connections, malformed JSON: only for safe calls, i.e. reads and
  writes carrying an Idempotency-Key (the gateway replays those; nothing moves twice). A 5xx
  that carries Retry-After (a 503 saying when to come back) waits that long instead of the
  backoff, under the same deadline rule as a 429;
- never 400, 401, 403, 404, 409 (a stale lifecycle guard must be re-read and re-decided by a
  person or a caller, not replayed), nor an answer too large to read (it would come back the
  same).

A provider's Retry-After is obeyed up to `RetryPolicy.max_retry_after`: the provider's words
are a request, not a licence to park a worker thread for an hour.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from upstream.errors import (
    ProtocolError,
    ProviderError,
    RateLimited,
    ResponseTooLarge,
    Unavailable,
)

T = TypeVar("T")

#: Longest Retry-After (seconds) obeyed in-process. A minute is already twice the default call
#: deadline, so with default settings anything longer ends the call at once and hands the
#: provider's full figure to the caller (a worker reschedules rather than parks its thread);
#: a caller with a longer deadline still never sleeps more than a minute per retry, whatever a
#: provider or a proxy writes in the header (a date in the far future, a typo of extra zeros).
MAX_RETRY_AFTER_SECONDS: Final = 60.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try: attempts, backoff base and cap (seconds), and a total deadline per call.

    The deadline covers every attempt and every wait of one call, so a caller (a worker with its
    own time limit, or an operator at a terminal) knows the worst case up front.
    """

    max_attempts: int = 5
    base_delay: float = 0.2
    max_delay: float = 5.0
    deadline: float = 30.0
    max_retry_after: float = MAX_RETRY_AFTER_SECONDS

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if (
            self.base_delay < 0
            or self.max_delay < 0
            or self.max_retry_after < 0
            or self.deadline <= 0
        ):
            raise ValueError("delays must be non-negative and the deadline positive")

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        """Delay before retry number `retry_number` (0 for the first retry): full jitter."""
        cap = min(self.max_delay, self.base_delay * (2**retry_number))
        return rng.uniform(0.0, cap)

    def delay_after(self, error: ProviderError, retry_number: int, rng: random.Random) -> float:
        """How long to wait after `error`: the provider's Retry-After (capped), else backoff."""
        asked = provider_retry_after(error)
        if asked is None:
            return self.backoff(retry_number, rng)
        return min(asked, self.max_retry_after)


NO_RETRY = RetryPolicy(max_attempts=1)


def provider_retry_after(error: ProviderError) -> float | None:
    """The seconds the provider asked us to wait (429 or a 5xx with Retry-After), if any."""
    if isinstance(error, RateLimited | Unavailable):
        return error.retry_after
    return None


def is_retryable(error: ProviderError, *, safe: bool) -> bool:
    """Whether repeating the request after `error` can neither harm nor be pointless."""
    if isinstance(error, RateLimited):
        return True
    if isinstance(error, Unavailable):
        return safe or not error.maybe_processed
    if isinstance(error, ResponseTooLarge):
        return False
    if isinstance(error, ProtocolError):
        return safe
    return False


RetryHook = Callable[[int, float, ProviderError], None]


def _no_hook(attempt: int, delay: float, error: ProviderError) -> None:
    """Default retry hook: nothing to report."""


@dataclass(slots=True)
class Retrier:
    """Runs one call's attempts under a policy; clock, sleep and rng are injectable for tests."""

    policy: RetryPolicy
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def run(
        self,
        attempt: Callable[[int, float], T],
        *,
        safe: bool,
        on_retry: RetryHook = _no_hook,
    ) -> T:
        """Call `attempt(number, seconds_left)` until it returns, or raise its last error.

        The error that ends the call carries `attempts` so its message can say how hard we
        tried.
        """
        deadline_at = self.clock() + self.policy.deadline
        number = 0
        while True:
            number += 1
            left = deadline_at - self.clock()
            try:
                return attempt(number, left)
            except ProviderError as error:
                error.attempts = number
                if number >= self.policy.max_attempts or not is_retryable(error, safe=safe):
                    raise
                delay = self.policy.delay_after(error, number - 1, self.rng)
                if delay >= deadline_at - self.clock():
                    raise
                on_retry(number, delay, error)
                self.sleep(delay)
