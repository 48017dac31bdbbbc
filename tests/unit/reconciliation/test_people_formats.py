"""Amounts, times and names as people read them: one formatter each, exact and unambiguous."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foundation import (
    currency_exponent,
    format_money,
    major_to_minor,
    moment,
    time_ago,
    use_unit_exponents,
    words,
)
from foundation.money import CURRENCY_EXPONENTS

NOW = datetime(2026, 11, 23, 20, 13, 50, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("amount", "currency", "reads"),
    [
        (77_700, "NGN", "777.00 NGN"),
        (10_001_255_000, "NGN", "100,012,550.00 NGN"),
        (-1, "USD", "-0.01 USD"),
        (1_500, "JPY", "1,500 JPY"),
        (1_234_567, "KWD", "1,234.567 KWD"),
        (15_001, "ngn", "150.01 NGN"),
        (77_700, "XYZ", "77,700 minor units of XYZ"),  # never a guessed decimal point
        (5, None, "5 minor units of (no currency)"),
        (12_345, "CLF", "1.2345 CLF"),
        (1_500, "BHD", "1.500 BHD"),
        (7, "VND", "7 VND"),
        (10**30 + 1, "NGN", "10,000,000,000,000,000,000,000,000,000.01 NGN"),
        (-(10**30), "KWD", "-1,000,000,000,000,000,000,000,000,000.000 KWD"),
        (10**30, "token:WEI@ethereum", f"{10**30:,} minor units of token:WEI@ethereum"),
        (5, "XAU", "5 minor units of XAU"),  # ISO gives gold no minor unit
    ],
)
def test_an_amount_reads_in_major_units_with_its_code(
    amount: int, currency: str | None, reads: str
) -> None:
    assert format_money(amount, currency) == reads


def test_a_signed_amount_says_which_way() -> None:
    assert format_money(1_000, "NGN", signed=True) == "+10.00 NGN"
    assert format_money(-1_000, "NGN", signed=True) == "-10.00 NGN"
    assert format_money(0, "NGN", signed=True) == "0.00 NGN"


def test_a_configured_unit_reads_with_its_own_exponent() -> None:
    use_unit_exponents({"token:ETH@ethereum": 18})
    try:
        assert format_money(2 * 10**30 + 7, "token:ETH@ethereum") == (
            "2,000,000,000,000.000000000000000007 token:ETH@ethereum"
        )
        assert major_to_minor("0.000000000000000001", "token:ETH@ethereum") == 1
    finally:
        use_unit_exponents({})
    assert format_money(7, "token:ETH@ethereum") == "7 minor units of token:ETH@ethereum"


@given(
    amount=st.integers(-(10**77), 10**77),
    currency=st.sampled_from(sorted(CURRENCY_EXPONENTS)),
)
def test_what_people_read_is_exactly_the_amount(amount: int, currency: str) -> None:
    number, code = format_money(amount, currency).split(" ")
    assert code == currency
    assert major_to_minor(number.replace(",", ""), currency) == amount
    assert currency_exponent(currency) == CURRENCY_EXPONENTS[currency]


def test_times_read_to_the_second_in_utc() -> None:
    assert moment(NOW) == "2026-11-23 20:13:50 UTC"
    lagos = NOW.astimezone(UTC).replace(tzinfo=None)  # the store's naive UTC, if ever met
    assert moment(lagos) == "2026-11-23 20:13:50 UTC"
    assert moment(None) == "never"


@pytest.mark.parametrize(
    ("delta", "reads"),
    [
        (timedelta(0), "just now"),
        (timedelta(seconds=42), "42 s ago"),
        (timedelta(minutes=3, seconds=59), "3 min ago"),
        (timedelta(hours=2, minutes=1), "2 h ago"),
        (timedelta(days=5, hours=23), "5 d ago"),
        (-timedelta(minutes=4), "in 4 min"),
    ],
)
def test_an_age_is_one_rough_unit(delta: timedelta, reads: str) -> None:
    assert time_ago(NOW - delta, NOW) == reads


def test_state_names_read_as_words() -> None:
    assert words("awaiting_finality") == "awaiting finality"
    assert words("open") == "open"
    assert words(None) == "unknown"
