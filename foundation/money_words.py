"""Amounts in words, said back before money moves: '1,250.50 NGN (one thousand two hundred fifty
and 50/100 NGN)'.

Figures alone let a slipped digit through: 12500.50 and 1250.50 look alike at a glance, their
words do not. The form is a cheque's: the whole units in English number words, the fraction as
digits over the unit's 10**exponent, then the code. No currency names and nothing that
depends on a locale, and every digit of the figures can be checked in the words.
"""

from __future__ import annotations

from typing import Final

from foundation.money import currency_exponent, format_money

#: Number words below twenty, then the tens: English, the language of every other line.
SMALL: Final = (
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"),
    *("eighteen", "nineteen"),
)
TENS: Final = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
#: Short-scale names by power of a thousand, largest first; past a decillion the count of
#: decillions is itself spelled ("one thousand decillion"), so any amount recon keeps has words.
SCALES: Final = (
    (11, "decillion"),
    (10, "nonillion"),
    (9, "octillion"),
    (8, "septillion"),
    (7, "sextillion"),
    (6, "quintillion"),
    (5, "quadrillion"),
    (4, "trillion"),
    (3, "billion"),
    (2, "million"),
    (1, "thousand"),
)


def number_in_words(n: int) -> str:
    """A whole number in English words: 1250 -> 'one thousand two hundred fifty'.

    No "and" inside the number (British "one hundred and five" and American "one hundred
    five" differ), so the only "and" in an amount's words is the one before its fraction.
    """
    if n < 0:
        return "minus " + number_in_words(-n)
    if n < 20:
        return SMALL[n]
    if n < 100:
        tens, units = divmod(n, 10)
        return TENS[tens] + (f"-{SMALL[units]}" if units else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{SMALL[hundreds]} hundred" + (f" {number_in_words(rest)}" if rest else "")
    for power, name in SCALES:
        if n >= 1000**power:
            high, rest = divmod(n, 1000**power)
            return f"{number_in_words(high)} {name}" + (f" {number_in_words(rest)}" if rest else "")
    raise AssertionError("unreachable: every n past 999 is at least a thousand")


def amount_in_words(amount_minor: int, currency: str) -> str:
    """An amount as a cheque writes it: 'one thousand two hundred fifty and 50/100 NGN'.

    The whole units in words, the fraction as digits over the currency's 10**exponent, then
    the code: no currency names, no locale, and every digit checkable against the figures. A
    unit whose exponent recon does not know is spelled as its minor units.
    """
    exp = currency_exponent(currency)
    if exp is None:
        return f"{number_in_words(amount_minor)} minor units of {currency}"
    whole, fraction = divmod(amount_minor, 10**exp)
    words = number_in_words(whole)
    if exp:
        words += f" and {fraction:0{exp}d}/{10**exp}"
    return f"{words} {currency}"


def said_back(amount_minor: int, currency: str) -> str:
    """The amount in figures and in words: '1,250.50 NGN (one thousand ... and 50/100 NGN)'."""
    return f"{format_money(amount_minor, currency)} ({amount_in_words(amount_minor, currency)})"
