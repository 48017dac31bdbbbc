"""CSV for a spreadsheet: one section of the report per file, one row per thing it lists.

A spreadsheet opens one table, so a CSV is one section of `reconciliation.reports.sections`
(the model text and HTML draw too), chosen by name: `items` (the default: one row per
unmatched item), `summary` (one row per figure, with what it counts), `drift`, `fees`,
`totals`, `transfers`, `ageing`, `alerts`, `open_alerts`, `holdings`, `window`, `audit`,
`legend`. The first row names the columns (snake_case); docs/reports.md lists each section's.

Cells are written for machines: an amount as a plain decimal in major units with the unit's
exponent ("1500.50", "-0.01", "30000000.000000000000000000"; no separators, so
`decimal.Decimal` reads it exactly) and, beside it in `<column>_minor`, the exact minor units
(the only amount given for a unit whose exponent recon does not know: the decimal is left
empty rather than guessed); times in UTC as `2026-11-29 04:39:17` (what a spreadsheet reads as
a date and time; ISO 8601 with an offset and microseconds it keeps as text); a holding as three columns,
`<column>_account_number`, `<column>_name`, `<column>_ref`; states and kinds as their machine
names. Text that a spreadsheet would run as a formula is written with a leading apostrophe.
An account number of digits only is written `="0123456789"`: a spreadsheet reads the bare
digits as a number, dropping the leading zeros (and past 15 digits, the last ones), and reads
this formula as the text it quotes; nothing but 0-9 is ever put in it (docs/reports.md).
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from datetime import UTC, datetime
from typing import Final

from foundation import major_decimal, printable
from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.model import Report
from reconciliation.reports.sections import BUILDERS, DEFAULT_CSV_SECTION
from reconciliation.reports.tables import (
    AMOUNTS,
    COUNTED,
    HOLDING,
    MONEY,
    AccountNumber,
    Cell,
    Column,
    Counted,
    Money,
)

#: How a cell starts when a spreadsheet would run it as a formula (OWASP's list for CSV
#: injection): such text is written with a leading apostrophe. Amounts are written by recon
#: itself (a '-' there is a sign) and are left alone.
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")

#: An account number recon writes as a formula that quotes it: ASCII digits only, so the formula
#: can hold nothing a spreadsheet would run (`\d` would admit other scripts' digits).
ACCOUNT_DIGITS: Final = re.compile(r"[0-9]+")

#: How a time is written: UTC to the second, a space for the T, no offset (the file says UTC).
#: Excel, LibreOffice and Google Sheets read this as a date and time.
TIME_FORMAT: Final = "%Y-%m-%d %H:%M:%S"


def spreadsheet_time(moment: datetime) -> str:
    """A time as a spreadsheet reads it (`TIME_FORMAT`, in UTC)."""
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def _headers(column: Column) -> list[str]:
    key = column.key
    if column.kind == HOLDING:
        return [f"{key}_account_number", f"{key}_name", f"{key}_ref"]
    if column.kind == MONEY:
        return [key, f"{key}_minor"]
    if column.kind == COUNTED:
        return [f"{key}_count", f"{key}_amount", f"{key}_amount_minor"]
    return [key]


def _money(amount: Money) -> list[str]:
    return [major_decimal(amount.minor, amount.currency) or "", str(amount.minor)]


def _cells(column: Column, cell: Cell) -> list[str]:
    """A cell as its CSV columns (as many as `_headers` names for the column)."""
    if column.kind == HOLDING:
        held = cell if isinstance(cell, HoldingIdentity) else HoldingIdentity(ref=str(cell or ""))
        return [
            _account_number(held.account_number or ""),
            _inert(held.account_name or ""),
            held.ref,
        ]
    if column.kind == MONEY and isinstance(cell, Money):
        return _money(cell)
    if column.kind == COUNTED and isinstance(cell, Counted):
        return [str(cell.count), *_money(cell.amount)]
    if column.kind == AMOUNTS and isinstance(cell, tuple):
        return ["; ".join(_amount_words(m) for m in cell if isinstance(m, Money))]
    if isinstance(cell, datetime):
        return [spreadsheet_time(cell)]
    if isinstance(cell, AccountNumber):
        return [_account_number(cell)]
    return [_inert("" if cell is None else str(cell))]


def _amount_words(amount: Money) -> str:
    """'1500.00 NGN' (several units share one cell of exceptions by age)."""
    major = major_decimal(amount.minor, amount.currency)
    if major is None:
        return f"{amount.minor} minor units of {amount.currency}"
    return f"{major} {amount.currency}"


def _inert(text: str) -> str:
    """Text a spreadsheet shows rather than runs: a cell starting like a formula (an account
    name '=HYPERLINK(...)' chosen by whoever opened the account) gets a leading apostrophe,
    which spreadsheets read as "this is text". Judged after leading white space (some
    spreadsheets skip it) and on the character's compatibility form (a fullwidth equals sign, U+FF1D, is read
    as `=`). Control characters, bidirectional overrides and zero-width characters are written
    as visible escapes (foundation.printable), as every other report format shows them."""
    shown = printable(text)
    first = shown.lstrip()[:1]
    if first and unicodedata.normalize("NFKC", first).startswith(FORMULA_STARTS):
        return "'" + shown
    if shown[:1].isspace():
        return "'" + shown  # a leading space kept visibly, not trimmed away by a spreadsheet
    return shown


def _account_number(text: str) -> str:
    """`="0123456789"` for an account number of digits only, which spreadsheets (Excel, Google
    Sheets, LibreOffice when it evaluates formulas on import) show as the text 0123456789,
    leading zero kept. Anything else is written as every other text is (`_inert`): a formula
    is only ever made around the digits 0-9, so it can run nothing (docs/decisions.md)."""
    return f'="{text}"' if ACCOUNT_DIGITS.fullmatch(text) else _inert(text)


def render_csv(report: Report, section: str | None = None) -> str:
    """One section of the report as CSV (`items` when none is named)."""
    columns, rows = BUILDERS[section or DEFAULT_CSV_SECTION](report).for_machines()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([header for column in columns for header in _headers(column)])
    for row in rows:
        writer.writerow(
            [value for c, cell in zip(columns, row, strict=True) for value in _cells(c, cell)]
        )
    return out.getvalue()
