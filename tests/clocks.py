"""Clocks a test moves instead of waiting: time passes when the test says so, and only then.

Every wait in the suite either polls a condition with a deadline (`tests.waiting`) or moves one
of these, passed to the code under test where it reads the time.
"""

from __future__ import annotations


class ManualClock:
    """A monotonic clock in seconds (time.monotonic's stand-in) that moves only when told."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
