"""Plain text for a terminal or an e-mail: Rich tables, rendered without colour to a string.

Draws `reconciliation.reports.sections` (the one model of every section, shared with HTML and
CSV): every amount goes through `foundation.money.format_money`, every time through
`foundation.readable.moment`, every state through `words`; holdings show their account number
and name (`HoldingIdentity.label`), and the last section lists each holding's holdingRef.
`width` is the terminal's width when there is one (Rich then wraps long cells inside their
column); without it the text takes its natural width, so a pipe or a file gets every value
whole.

Every value comes from the provider or the store, and some of it (ids, references, narrations,
subjects) was chosen by whoever sent it. Rich reads `[...]` in a string as markup: an id with
`[/]` in it made the whole report fail, and `[link=...]` put a hyperlink in an operator's
terminal. So the console reads no markup and no emoji codes at all (nothing here uses them),
and each cell goes through `foundation.printable`, which shows control characters as escapes
instead of sending them to the terminal.
"""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any, Final

from rich import box
from rich.console import Console
from rich.table import Table

from foundation.money import format_money
from foundation.printable import printable
from foundation.readable import moment, words
from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.legend import grace_words, legend
from reconciliation.reports.model import Report
from reconciliation.reports.sections import SUMMARY, build_sections
from reconciliation.reports.tables import (
    AMOUNTS,
    COUNT,
    COUNTED,
    MOMENT,
    MONEY,
    NAME,
    Cell,
    Counted,
    Money,
    Section,
)

#: Width used when none is given: wider than any row the report draws, so nothing is cut.
NATURAL_WIDTH: Final = 1_000


def window_line(report: Report) -> str:
    window = report.window
    since = moment(window.since) if window.since else "the beginning"
    scope = f", holding {report.scope.label}" if report.scope else ", all holdings"
    return f"{since} to {moment(window.until)}{scope}"


def audit_sentence(report: Report) -> str:
    """The last ledger audit and when it finished, or that none has run yet."""
    return report.audit_line()


def _money(amount: Money) -> str:
    return format_money(amount.minor, amount.currency, signed=amount.signed)


def for_people(kind: str, cell: Cell) -> str:
    """A cell as a person reads it, in text and HTML alike (the column's kind says how)."""
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


class _DataTable(Table):
    """A Rich table whose cells are data: every cell is made printable as it is added."""

    def add_row(self, *cells: object, **options: Any) -> None:
        super().add_row(*(None if c is None else printable(str(c)) for c in cells), **options)


def _console(out: io.StringIO, width: int | None) -> Console:
    """A console for data: no markup, no emoji codes, no highlighting, no colour."""
    return Console(
        file=out,
        width=width or NATURAL_WIDTH,
        color_system=None,
        force_terminal=False,
        markup=False,
        emoji=False,
        highlight=False,
    )


def _section(console: Console, section: Section) -> None:
    """A section as a table, or its one sentence when it has no rows."""
    if not section.rows:
        console.print(printable(section.empty))
        console.print()
        return
    columns, rows = section.for_people()
    table = _DataTable(
        title=printable(section.title), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in columns:
        # fold: a long reference breaks across lines instead of losing its end to an ellipsis
        table.add_column(
            printable(column.title),
            justify="right" if column.numeric else "left",
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(for_people(c.kind, cell) for c, cell in zip(columns, row, strict=True)))
    console.print(table)


def render_text(report: Report, width: int | None = None) -> str:
    out = io.StringIO()
    console = _console(out, width)
    console.print("Reconciliation report")
    console.print(printable(window_line(report)))
    console.print(
        f"Generated {moment(report.generated_at)}; "
        f"notification grace {grace_words(report.grace_seconds)}"
    )
    console.print(printable(audit_sentence(report)))
    console.print()
    for section in build_sections(report):
        if section.people:
            _section(console, section)
        if section.key == SUMMARY:  # the figures, then what they count
            console.print("What the figures count:")
            for term, definition in legend(report.grace_seconds):
                console.print(f"  {term}: {definition}")
            console.print()
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"
