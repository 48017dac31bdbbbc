"""A clock that tests and benchmarks can move.

Every time the sandbox reads (posting times, finality deadlines, projection lag, retry backoff,
idempotency retention) comes from here, so advancing it makes the whole sandbox jump forward
consistently instead of sleeping.
"""

from __future__ import annotations

import threading
import time


class Clock:
    """Real time plus an offset, or a frozen instant that only ``advance`` moves."""

    __slots__ = ("_frozen_ms", "_lock", "_offset_ms")

    def __init__(self, *, frozen_at_ms: int | None = None) -> None:
        self._lock = threading.Lock()
        self._offset_ms = 0
        self._frozen_ms = frozen_at_ms

    @classmethod
    def frozen(cls, at_ms: int = 1_793_000_000_000) -> Clock:
        """A clock that stands still: equal timestamps on purpose, for tie-ordering tests."""
        return cls(frozen_at_ms=at_ms)

    def now_ms(self) -> int:
        """Epoch milliseconds: the unit postings are ordered in."""
        with self._lock:
            if self._frozen_ms is not None:
                return self._frozen_ms
            return int(time.time() * 1000) + self._offset_ms

    def now(self) -> float:
        """Epoch seconds, for deadlines."""
        return self.now_ms() / 1000.0

    def advance(self, seconds: float) -> None:
        """Jump forward; background work that became due runs on its next tick."""
        if seconds < 0:
            raise ValueError("the sandbox clock never goes backwards")
        with self._lock:
            step = round(seconds * 1000)
            if self._frozen_ms is not None:
                self._frozen_ms += step
            else:
                self._offset_ms += step
