"""Numbers written by someone else, converted only once their cost is known to be small.

A JSON number or a query parameter is text, and the conversions Python offers cost what the
number's value says, not what its text says: `format(Decimal("1e999999999999"), "f")` tries to
write a trillion digits (MemoryError), `int(Decimal("1e500000"))` holds the interpreter for
a minute, and `int("9" * 5000)` is refused only after the text was read. Everything recon
converts from a delivery body, a request or a form goes through the checks here first, which
look only at the text or at a `Decimal`'s exponent (both cheap), so no input costs more than a
small multiple of its own size. Error texts carry a bounded excerpt of the value, never the
value itself (or worse, its expansion).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

#: Longest excerpt of an untrusted value an error text carries: enough to recognise a value
#: (a UUID is 36 characters), far too little to turn a refusal into megabytes of text.
EXCERPT_LIMIT: Final = 40
#: Largest row id either database holds (a signed 64-bit integer); a larger one overflows the
#: driver's parameter.
MAX_ROW_ID: Final = 2**63 - 1
#: Digits of MAX_ROW_ID: a row id's text longer than this is refused without converting it.
ROW_ID_DIGITS: Final = len(str(MAX_ROW_ID))


class CostlyNumberError(ValueError):
    """A number refused before it was converted: its text or its magnitude is out of bounds."""


def excerpt(value: object, limit: int = EXCERPT_LIMIT) -> str:
    """`repr(value)`, cut to `limit` characters with a note of the full length.

    A `Decimal` is shown in its scientific form (`Decimal('1E+999999999999')`), which is as
    long as its own digits, never its expansion."""
    shown = repr(value)
    if len(shown) <= limit:
        return shown
    return f"{shown[: limit - 3]}... ({len(shown)} characters)"


def decimal_within(value: Decimal, *, whole: int, places: int, what: str) -> Decimal:
    """`value` if written out in plain digits it has at most `whole` digits before the point
    and `places` after it; CostlyNumberError otherwise (also for NaN and the infinities).

    Reads only the exponent and the digit count, so `1e999999999999` costs what its text does.
    """
    if not value.is_finite():
        raise CostlyNumberError(f"{what} {excerpt(value)} is not a finite number")
    exp = value.as_tuple().exponent
    assert isinstance(exp, int)  # finite, checked above
    if value.adjusted() >= whole or -exp > places:
        raise CostlyNumberError(
            f"{what} {excerpt(value)} is out of range: at most {whole} digits before the point "
            f"and {places} after it"
        )
    return value


def whole_number(text: str, *, digits: int, what: str) -> int:
    """The non-negative whole number ASCII `text` spells, of at most `digits` digits (leading
    zeros counted); CostlyNumberError naming `what` otherwise. Superscripts and other Unicode
    digits, which `str.isdigit` accepts and `int` refuses, are refused here with the rest."""
    if not text.isascii() or not text.isdigit() or len(text) > digits:
        raise CostlyNumberError(
            f"{what} {excerpt(text)} is not a whole number of at most {digits} digits"
        )
    return int(text)


def row_id(text: str, *, what: str = "row id") -> int:
    """A row id from untrusted text: 1 to MAX_ROW_ID, or CostlyNumberError naming `what`."""
    number = whole_number(text, digits=ROW_ID_DIGITS, what=what)
    if not 1 <= number <= MAX_ROW_ID:
        raise CostlyNumberError(
            f"{what} {excerpt(text)} is out of range: row ids run from 1 to {MAX_ROW_ID}"
        )
    return number
