"""Exact money: integer minor units end to end (invariant 5, docs/architecture.md).

Providers send amounts two ways: gateway strings of minor units ("150050") and webhook decimal
strings of major units ("1500.50"). Both become an int here, through `Decimal` parsed from the
text itself, never through a float, and a value that does not fit the currency's exponent is
refused rather than rounded: a rounding we did silently is a drift nobody can explain later.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

#: ISO 4217 exponents of the currencies recon has met; anything else needs adding here, on
#: purpose, rather than a guess of 2.
CURRENCY_EXPONENTS: Final[dict[str, int]] = {
    "NGN": 2,
    "USD": 2,
    "EUR": 2,
    "GBP": 2,
    "GHS": 2,
    "KES": 2,
    "ZAR": 2,
    "XOF": 0,
    "JPY": 0,
    "KWD": 3,
}

_MINOR_DIGITS: Final = re.compile(r"[0-9]+")
_MAJOR_DECIMAL: Final = re.compile(r"-?[0-9]+(\.[0-9]+)?")


class AmountError(ValueError):
    """An amount that cannot be converted exactly; the message says what and why."""


def exponent(currency: str) -> int:
    try:
        return CURRENCY_EXPONENTS[currency.upper()]
    except KeyError:
        raise AmountError(
            f"unknown currency {currency!r}: add its ISO 4217 exponent to CURRENCY_EXPONENTS"
        ) from None


def parse_minor_units(text: str) -> int:
    """A gateway `*MinorUnits` string ("150050") as an int; anything but digits is refused."""
    if not isinstance(text, str) or not _MINOR_DIGITS.fullmatch(text):
        raise AmountError(f"minor units must be a string of decimal digits, got {text!r}")
    return int(text)


def major_to_minor(amount: str | int, currency: str) -> int:
    """A decimal major-unit amount ("1500.50" NGN) as exact minor units (150050).

    Accepts a JSON string or integer; a float is refused because it may already be inexact.
    """
    if isinstance(amount, bool) or not isinstance(amount, (str, int)):
        raise AmountError(
            f"amount must be a decimal string, got {type(amount).__name__} {amount!r}"
        )
    text = str(amount).strip()
    if not _MAJOR_DECIMAL.fullmatch(text):
        raise AmountError(f"amount {text!r} is not a plain decimal number")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise AmountError(f"amount {text!r} is not a decimal number") from None
    scaled = value.scaleb(exponent(currency))
    if scaled != scaled.to_integral_value():
        raise AmountError(
            f"amount {text!r} has more decimal places than {currency} allows ({exponent(currency)})"
        )
    return int(scaled)


def format_minor(amount: int, currency: str) -> str:
    """Minor units as a major-unit string for people: 150050 NGN -> '1,500.50'."""
    exp = exponent(currency)
    value = Decimal(amount).scaleb(-exp)
    return f"{value:,.{exp}f}"


#: How an amount reads when its currency's exponent is unknown: the exact integer, labelled, so
#: nobody mistakes 77700 minor units for 77,700 major ones.
UNKNOWN_EXPONENT_FORM: Final = "{amount} minor units of {currency}"


def currency_exponent(currency: str | None) -> int | None:
    """The ISO 4217 exponent, or None when recon does not know the currency (JSON says so)."""
    if not currency:
        return None
    return CURRENCY_EXPONENTS.get(currency.upper())


def format_money(amount_minor: int, currency: str | None, *, signed: bool = False) -> str:
    """The one way a person reads an amount: '1,500.50 NGN', '-0.01 USD', '1,500 JPY'.

    Major units with the currency's own exponent and thousands separated, then the code. Every
    human surface (report text and HTML, the CLI, alert subjects, the alert webhook's text)
    calls this, so an amount reads the same wherever it appears. `signed` puts '+' before a
    positive amount (a drift reads '+10.00 NGN'). Never raises: a currency whose exponent is
    unknown keeps its exact minor units, said in words, rather than a guessed decimal point.
    """
    code = (currency or "").upper() or "(no currency)"
    exp = currency_exponent(currency)
    sign = "+" if signed and amount_minor > 0 else ""
    if exp is None:
        return sign + UNKNOWN_EXPONENT_FORM.format(amount=f"{amount_minor:,}", currency=code)
    return f"{sign}{format_minor(amount_minor, code)} {code}"
