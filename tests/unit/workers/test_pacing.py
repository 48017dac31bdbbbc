"""Backoff of transfer polls and the rate limiter's windows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reconciliation.transfers.polling import Backoff
from workers.gateway_rate_limit import Window


def test_backoff_doubles_from_the_first_wait_up_to_the_cap() -> None:
    backoff = Backoff(first_seconds=2, cap_seconds=60)
    waits = [backoff.delay(n).total_seconds() for n in range(1, 8)]
    assert waits == [2, 4, 8, 16, 32, 60, 60]
    assert backoff.delay(10_000) == timedelta(seconds=60)


@pytest.mark.parametrize(
    ("rate", "limit", "seconds"),
    [(50, 50, 1), (1, 1, 1), (0.5, 1, 2), (12.5, 25, 2), (0.3, 1, 4), (1000, 1000, 1)],
)
def test_windows_never_allow_more_than_the_rate(rate: float, limit: int, seconds: int) -> None:
    window = Window.for_rate(rate)
    assert (window.limit, window.seconds) == (limit, seconds)
    assert window.limit / window.seconds <= rate


def test_a_rate_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="> 0"):
        Window.for_rate(0)
