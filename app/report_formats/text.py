"""Plain text for a terminal or an e-mail: Rich tables, rendered without colour to a string.

Draws the report's sections (`reconciliation.reports.build_sections`, the one model of every
section, shared with HTML, CSV and JSON) cell by cell as people read them
(`app.report_formats.people`); holdings show their account number and name, and the last
section lists each holding's holdingRef.
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
from typing import Any, Final

from rich import box
from rich.console import Console
from rich.table import Table

from app.report_formats.people import for_people, window_line
from foundation import moment, printable
from reconciliation.reports import (
    SUMMARY,
    Report,
    Section,
    build_sections,
    grace_words,
    legend_terms,
)

#: Width used when none is given: wider than any row the report draws, so nothing is cut.
NATURAL_WIDTH: Final = 1_000


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
    console.print(printable(report.audit_line()))
    console.print()
    for section in build_sections(report):
        if section.people:
            _section(console, section)
        if section.key == SUMMARY:  # the figures, then what they count
            console.print("What the figures count:")
            for term, definition in legend_terms(report.grace_seconds):
                console.print(f"  {term}: {definition}")
            console.print()
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"
