"""Exact money: integer minor units end to end (invariant 5, docs/architecture.md).

Providers send amounts two ways: gateway strings of minor units ("150050") and webhook decimal
strings of major units ("1500.50"). Both become an int here, through `Decimal` parsed from the
text itself, never through a float, and a value that does not fit the currency's exponent is
refused rather than rounded: a rounding we did silently is a drift nobody can explain later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final


def _codes(exp: int, codes: str) -> dict[str, int]:
    return dict.fromkeys(codes.split(), exp)


#: ISO 4217 exponents of the active currencies and funds codes (what a minor unit is worth).
#: Codes whose minor unit ISO gives as "N.A." (gold, SDR, test and bond units) are left out on
#: purpose: their amounts read as honest minor units (UNKNOWN_EXPONENT_FORM), never a guess.
CURRENCY_EXPONENTS: Final[dict[str, int]] = {
    **_codes(
        0,
        "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF",
    ),
    **_codes(3, "BHD IQD JOD KWD LYD OMR TND"),
    **_codes(4, "CLF UYW"),
    **_codes(
        2,
        "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN "
        "BWP BYN BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB "
        "EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS "
        "KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN "
        "MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD "
        "SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS "
        "UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG",
    ),
}

#: Most digits an amount may have: recon's store keeps NUMERIC(78, 0), and 78 digits hold any
#: unsigned 256-bit integer (2**256 has 78), the widest base unit on-chain assets count in. An
#: amount past it is refused where it enters, with this bound in the reason.
MAX_AMOUNT_DIGITS: Final = 78

#: The value unit kind the spec shows; its unit code is the currency itself.
FIAT: Final = "fiat"

_MINOR_DIGITS: Final = re.compile(r"[0-9]+")
_MAJOR_DECIMAL: Final = re.compile(r"-?[0-9]+(\.[0-9]+)?")


class AmountError(ValueError):
    """An amount that cannot be converted exactly; the message says what and why."""


def exponent(currency: str) -> int:
    found = currency_exponent(currency)
    if found is None:
        raise AmountError(
            f"unknown currency {currency!r}: not in ISO 4217, and RECON_UNIT_EXPONENTS gives "
            "this unit no exponent"
        )
    return found


def check_digits(amount: int) -> int:
    """`amount` itself, or AmountError when it has more digits than recon keeps."""
    digits = len(str(abs(amount)))
    if digits > MAX_AMOUNT_DIGITS:
        raise AmountError(
            f"amount has {digits} digits; recon keeps at most {MAX_AMOUNT_DIGITS} "
            "(any 256-bit amount fits)"
        )
    return amount


def parse_minor_units(text: object) -> int:
    """A gateway `*MinorUnits` string ("150050") as an int; anything but digits is refused,
    and so is an amount longer than MAX_AMOUNT_DIGITS."""
    if not isinstance(text, str) or not _MINOR_DIGITS.fullmatch(text):
        raise AmountError(
            f"expected an amount as a string of decimal digits (minor units), got {_short(text)}"
        )
    digits = text.lstrip("0")
    _check_length(digits, 0)
    # Leading zeros dropped: int() refuses a text past 4,300 characters, zeros or not.
    return check_digits(int(digits or "0"))


def _check_length(digits: str, exp: int) -> None:
    """Refuse before int() sees the text: past 4,300 digits Python refuses to convert at all."""
    if len(digits) + exp > MAX_AMOUNT_DIGITS:
        raise AmountError(
            f"amount has {len(digits) + exp} digits in minor units; recon keeps at most "
            f"{MAX_AMOUNT_DIGITS} (any 256-bit amount fits)"
        )


def _short(value: object) -> str:
    """A value for an error message, cut so a megabyte of digits is not echoed back."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


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
        raise AmountError(f"amount {_short(text)} is not a plain decimal number")
    exp = exponent(currency)
    whole, _, fraction = text.lstrip("-").partition(".")
    _check_length(whole.lstrip("0"), exp)
    if len(fraction.rstrip("0")) > exp:
        raise AmountError(
            f"amount {_short(text)} has more decimal places than {currency} allows ({exp})"
        )
    # Integer arithmetic on the digits themselves: Decimal's context would round past 28 digits.
    # Leading zeros dropped: int() refuses a text past 4,300 characters, zeros or not.
    minor = int(whole.lstrip("0") or "0") * 10**exp + int((fraction + "0" * exp)[:exp] or "0")
    return check_digits(-minor if text.startswith("-") else minor)


def format_minor(amount: int, currency: str) -> str:
    """Minor units as a major-unit string for people: 150050 NGN -> '1,500.50'. Exact at any
    size (integer arithmetic, no Decimal context to round past 28 digits)."""
    exp = exponent(currency)
    whole, fraction = divmod(abs(amount), 10**exp)
    sign = "-" if amount < 0 else ""
    return f"{sign}{whole:,}" + (f".{fraction:0{exp}d}" if exp else "")


def major_decimal(amount: int, currency: str | None) -> str | None:
    """Minor units as a plain major-unit decimal for machines that want one (a spreadsheet's
    CSV): 150050 NGN -> '1500.50', -1 USD -> '-0.01', 1500 JPY -> '1500'. No separators, so
    `decimal.Decimal` reads it exactly; None when the unit's exponent is unknown (the caller
    keeps the minor units instead of guessing a decimal point)."""
    exp = currency_exponent(currency)
    if exp is None:
        return None
    whole, fraction = divmod(abs(amount), 10**exp)
    sign = "-" if amount < 0 else ""
    return f"{sign}{whole}" + (f".{fraction:0{exp}d}" if exp else "")


#: How an amount reads when its currency's exponent is unknown: the exact integer, labelled, so
#: nobody mistakes 77700 minor units for 77,700 major ones.
UNKNOWN_EXPONENT_FORM: Final = "{amount} minor units of {currency}"


#: Display exponents of units other than ISO currencies (RECON_UNIT_EXPONENTS), by unit code;
#: set once at start-up by foundation.settings.load_settings (`use_unit_exponents`).
_CONFIGURED_EXPONENTS: dict[str, int] = {}


def use_unit_exponents(exponents: Mapping[str, int]) -> None:
    """Make the configured display exponents the ones every format_money call uses."""
    _CONFIGURED_EXPONENTS.clear()
    _CONFIGURED_EXPONENTS.update(exponents)


def currency_exponent(currency: str | None) -> int | None:
    """The unit's exponent: ISO 4217 for a currency, RECON_UNIT_EXPONENTS for other units; None
    when recon knows neither (JSON says so, and people read honest minor units)."""
    if not currency:
        return None
    iso = CURRENCY_EXPONENTS.get(currency.upper())
    return iso if iso is not None else _CONFIGURED_EXPONENTS.get(currency)


def unit_code(
    kind: str,
    currency: str | None = None,
    asset: str | None = None,
    network: str | None = None,
    instrument_ref: str | None = None,
) -> str:
    """The one string a value unit is stored, compared and grouped by.

    A fiat unit is its currency ("NGN"); any other kind is `kind:asset@network#instrumentRef`
    with absent parts left out ("token:USDC@ethereum"). Two units are the same unit exactly
    when their codes are equal, so amounts are only ever added under one code.
    """
    if kind == FIAT and currency:
        return currency
    code = kind
    if asset:
        code += f":{asset}"
    elif currency:
        code += f":{currency}"
    if network:
        code += f"@{network}"
    if instrument_ref:
        code += f"#{instrument_ref}"
    return code


def format_money(amount_minor: int, currency: str | None, *, signed: bool = False) -> str:
    """The one way a person reads an amount: '1,500.50 NGN', '-0.01 USD', '1,500 JPY'.

    Major units with the currency's own exponent and thousands separated, then the code. Every
    human surface (report text and HTML, the CLI, alert subjects, the alert webhook's text)
    calls this, so an amount reads the same wherever it appears. `signed` puts '+' before a
    positive amount (a drift reads '+10.00 NGN'). Never raises: a currency whose exponent is
    unknown keeps its exact minor units, said in words, rather than a guessed decimal point.
    """
    code = currency or "(no currency)"
    if code.upper() in CURRENCY_EXPONENTS:
        code = code.upper()
    exp = currency_exponent(currency)
    sign = "+" if signed and amount_minor > 0 else ""
    if exp is None:
        return sign + UNKNOWN_EXPONENT_FORM.format(amount=f"{amount_minor:,}", currency=code)
    return f"{sign}{format_minor(amount_minor, code)} {code}"
