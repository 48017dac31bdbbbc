"""The gateway rate in use after 429s, on an injected clock: lowered, paused, climbing back."""

from __future__ import annotations

from workers.gateway_rate import (
    CLIMB_SECONDS,
    FLOOR_SHARE,
    LocalRateState,
    RateState,
    after_429,
    rate_in_use,
)

CONFIGURED = 50.0


def test_a_429_storm_halves_the_rate_once_per_second_down_to_the_floor() -> None:
    state = RateState()
    assert rate_in_use(CONFIGURED, state, 0.0) == CONFIGURED
    for _ in range(20):  # one burst: answers to requests already in flight
        state = after_429(CONFIGURED, state, 100.0, retry_after=2.0)
    assert rate_in_use(CONFIGURED, state, 100.0) == 25.0
    for second in range(1, 20):  # the storm goes on, second after second
        state = after_429(CONFIGURED, state, 100.0 + second, retry_after=2.0)
    assert rate_in_use(CONFIGURED, state, 119.0) == FLOOR_SHARE * CONFIGURED


def test_retry_after_pauses_every_request_until_it_has_passed() -> None:
    state = after_429(CONFIGURED, RateState(), 100.0, retry_after=7.0)
    assert state.paused_until == 107.0
    shorter = after_429(CONFIGURED, state, 101.5, retry_after=1.0)
    assert shorter.paused_until == 107.0  # a shorter ask never shortens the pause
    capped = after_429(CONFIGURED, state, 102.0, retry_after=86_400.0)
    assert capped.paused_until < 102.0 + 3600  # an absurd Retry-After is capped


def test_without_429s_the_rate_climbs_back_to_the_configured_one() -> None:
    store = LocalRateState()
    store.lower(CONFIGURED, 100.0, 1.0)
    lowered = rate_in_use(CONFIGURED, store.read(), 100.0)
    assert lowered == 25.0
    one_step = rate_in_use(CONFIGURED, store.read(), 100.0 + CLIMB_SECONDS)
    assert lowered < one_step < CONFIGURED
    back = rate_in_use(CONFIGURED, store.read(), 100.0 + 10 * CLIMB_SECONDS)
    assert back == CONFIGURED
