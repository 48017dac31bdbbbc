"""Amounts said back in words before money moves: every digit of the figures is in the words."""

from __future__ import annotations

import pytest

from foundation import said_back
from foundation.money_words import amount_in_words, number_in_words


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, "zero"),
        (7, "seven"),
        (15, "fifteen"),
        (20, "twenty"),
        (21, "twenty-one"),
        (105, "one hundred five"),
        (999, "nine hundred ninety-nine"),
        (1_000, "one thousand"),
        (1_250, "one thousand two hundred fifty"),
        (1_000_001, "one million one"),
        (2_000_000_000, "two billion"),
        (10**33, "one decillion"),
        (10**36 + 12, "one thousand decillion twelve"),
    ],
)
def test_numbers_read_in_words(n: int, words: str) -> None:
    assert number_in_words(n) == words


@pytest.mark.parametrize(
    ("minor", "unit", "said"),
    [
        (500, "NGN", "5.00 NGN (five and 00/100 NGN)"),
        (125_050, "NGN", "1,250.50 NGN (one thousand two hundred fifty and 50/100 NGN)"),
        (7, "NGN", "0.07 NGN (zero and 07/100 NGN)"),
        (1_500, "JPY", "1,500 JPY (one thousand five hundred JPY)"),
        (1_234, "KWD", "1.234 KWD (one and 234/1000 KWD)"),
        (
            77_700,
            "XYZ",
            "77,700 minor units of XYZ (seventy-seven thousand seven hundred minor units of XYZ)",
        ),
    ],
)
def test_an_amount_is_said_in_figures_and_words(minor: int, unit: str, said: str) -> None:
    assert said_back(minor, unit) == said


def test_words_carry_every_digit_of_a_large_amount() -> None:
    words = amount_in_words(10**40 + 99, "NGN")
    assert words == "one hundred thousand decillion and 99/100 NGN"
