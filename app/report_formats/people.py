"""How a report reads to a person, in text and HTML alike: one cell, the window in a line.

Every amount goes through `foundation.money.format_money`, every time through
`foundation.readable.moment`, every state through `words`; a holding is its account number and
name (`HoldingIdentity.label`). The column's kind (`reconciliation.reports.sections`) says which.
"""

from __future__ import annotations

from datetime import datetime

from foundation import format_money, moment, words
from reconciliation.postings import HoldingIdentity
from reconciliation.reports import (
    AMOUNTS,
    COUNT,
    COUNTED,
    MOMENT,
    MONEY,
    NAME,
    Cell,
    Counted,
    Money,
    Report,
)


def window_line(report: Report) -> str:
    window = report.window
    since = moment(window.since) if window.since else "the beginning"
    scope = f", holding {report.scope.label}" if report.scope else ", all holdings"
    return f"{since} to {moment(window.until)}{scope}"


def _money(amount: Money) -> str:
    return format_money(amount.minor, amount.currency, signed=amount.signed)


def for_people(kind: str, cell: Cell) -> str:
    """A cell as a person reads it (the column's kind says how)."""
    if cell is None:
        return ""
    if kind == MONEY and isinstance(cell, Money):
        return _money(cell)
    if kind == COUNTED and isinstance(cell, Counted):
        return f"{cell.count:,} / {_money(cell.amount)}"
    if kind == AMOUNTS and isinstance(cell, tuple):
        return ", ".join(_money(m) for m in cell if isinstance(m, Money)) or "-"
    if kind == MOMENT and isinstance(cell, datetime):
        return moment(cell)
    if isinstance(cell, HoldingIdentity):
        return cell.label
    if kind == NAME and isinstance(cell, str):
        return words(cell)
    if kind == COUNT and isinstance(cell, int):
        return f"{cell:,}"
    return str(cell)
