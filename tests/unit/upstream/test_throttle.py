"""Client-side pacing keeps the average rate and allows the configured burst."""

from __future__ import annotations

import pytest

from upstream.throttle import Throttle


def test_requests_are_spaced_to_the_rate_after_the_burst() -> None:
    now = [100.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    throttle = Throttle(5.0, burst=2, clock=lambda: now[0], sleep=sleep)
    waits = [throttle.acquire() for _ in range(6)]
    assert waits[:2] == [0.0, 0.0]
    assert all(w == pytest.approx(0.2) for w in waits[2:])
    assert now[0] == pytest.approx(100.8)


def test_idle_time_does_not_bank_more_than_the_burst() -> None:
    now = [0.0]
    throttle = Throttle(10.0, burst=1, clock=lambda: now[0], sleep=lambda s: None)
    throttle.acquire()
    now[0] = 60.0
    assert throttle.acquire() == 0.0
    assert throttle.acquire() == pytest.approx(0.1)


def test_nonsense_rates_are_refused() -> None:
    with pytest.raises(ValueError):
        Throttle(0)
