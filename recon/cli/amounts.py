"""Amounts as people type them at the command line: major units, as they are said.

A person says "five naira", so `--amount 5.00` (or `5`) is what they type; `500` meaning 5.00
NGN is a hundredfold mistake waiting to happen. The exact minor units stay reachable behind
`--amount-minor`, for scripts and for units whose exponent recon does not know, and the two
options exclude each other. An amount with more decimals than the currency has is refused,
never rounded. Every command that moves money says the amount back in figures and in words
before it moves it (`foundation.money_words.said_back`), so a slip of the finger reads as the
wrong sentence, not just a digit. The HTTP API and JSON keep integer minor units.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

import click

from foundation import AmountError, currency_exponent, format_money, major_to_minor

F = TypeVar("F", bound=Callable[..., Any])

#: A major-unit amount as typed: digits, optionally a point and more digits. No sign (money
#: moves one way per command), no thousands separator (a comma is a decimal point in half the
#: world, so "1,500" would be read two ways).
TYPED_AMOUNT: Final = re.compile(r"[0-9]+(\.[0-9]+)?")


def amount_options(func: F) -> F:
    """`--amount` (major units, as people say it) or `--amount-minor` (exact minor units)."""
    func = click.option(
        "--amount-minor",
        type=click.IntRange(min=1),
        default=None,
        help="The amount in exact minor units instead (500 is 5.00 NGN): for scripts, and for "
        "a unit whose exponent recon does not know. Not with --amount.",
    )(func)
    return click.option(
        "--amount",
        "amount_major",
        default=None,
        metavar="MAJOR",
        help="The amount as people say it, in major units: 5, 5.00 or 1500.50 (NGN). At most "
        "the currency's decimal places (NGN 2, JPY 0, KWD 3); no thousands separators.",
    )(func)


def minor_units(amount_major: str | None, amount_minor: int | None, currency: str) -> int:
    """The amount to move in exact minor units, from whichever option was given.

    Called in the command body, after the settings are loaded: RECON_UNIT_EXPONENTS names the
    exponents of units other than ISO currencies.
    """
    if (amount_major is None) == (amount_minor is None):
        raise click.UsageError(
            "give the amount once: --amount in major units (5.00) or --amount-minor in "
            "minor units (500)"
        )
    if amount_minor is not None:
        return amount_minor
    assert amount_major is not None
    text = amount_major.strip()
    exp = currency_exponent(currency)
    if exp is None:
        raise click.BadParameter(
            f"recon knows no exponent for {currency} (not an ISO 4217 currency, not in "
            "RECON_UNIT_EXPONENTS), so it cannot tell where its decimal point is; give the "
            "exact minor units with --amount-minor",
            param_hint="--amount",
        )
    if not TYPED_AMOUNT.fullmatch(text):
        raise click.BadParameter(
            f"{text!r} is not an amount: write digits with a point for the decimals, no sign "
            "or separators (1500.50)",
            param_hint="--amount",
        )
    fraction = text.partition(".")[2]
    if len(fraction) > exp:
        smallest = format_money(1, currency)
        raise click.BadParameter(
            f"{text} has {len(fraction)} decimal places; {currency} has {exp} (its exponent), "
            f"so its smallest amount is {smallest}. Nothing is rounded: give at most {exp}, or "
            "the exact minor units with --amount-minor",
            param_hint="--amount",
        )
    try:
        minor = major_to_minor(text, currency)
    except AmountError as exc:
        raise click.BadParameter(str(exc), param_hint="--amount") from None
    if minor == 0:
        raise click.BadParameter("the amount must be more than zero", param_hint="--amount")
    return minor
