"""How the command's output reads to a person: its width, its times, its control characters.

A person at a terminal needs tables that fit the window; a script reading a pipe needs every
value whole. So the width is the terminal's when standard output is one, `--width` when the
person says so (for a file they will read in a given window), and None (no limit) otherwise.

Every time a command prints for a person goes through `shown_time` (one format: the date, the
second, UTC, said as `UTC`), whether it comes from the store, a summary's ISO text or the
gateway; `--json` and CSV keep ISO 8601 for machines.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import click

from foundation import moment, printable, time_ago

#: Narrowest layout we draw: below this even one alert's header cannot be read.
MIN_WIDTH: Final = 40

#: Width assumed for a terminal that will not say (shutil's own fallback).
FALLBACK_COLUMNS: Final = 80


def output_width(requested: int | None) -> int | None:
    """Columns to lay output out for; None means a pipe or file, where nothing is cut."""
    if requested is not None:
        return max(requested, MIN_WIDTH)
    if not sys.stdout.isatty():
        return None
    columns = shutil.get_terminal_size((FALLBACK_COLUMNS, 24)).columns
    return max(columns, MIN_WIDTH)


#: `--width N`, as every list command takes it (webhooks, endpoints, deliveries).
width_option = click.option(
    "--width",
    type=click.IntRange(min=1),
    help="Lay out for this many columns (default: the terminal's; a pipe gets every value whole).",
)


def table_lines(rows: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """Rows as columns padded to their widest cell; with a width (`output_width`), a line
    longer than it is cut to it, the cut marked with `…` (a pipe's lines stay whole)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        fitted("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), width)
        for row in rows
    ]


def fitted(line: str, width: int | None) -> str:
    """`line`, cut to `width` columns with `…` marking the cut (None: whole)."""
    if width is None or len(line) <= width:
        return line
    return line[: width - 1] + "…"


def say(message: object = None, **options: Any) -> None:
    """`click.echo` for text a person reads: control characters in it are shown as escapes.

    Ids, references, narrations and headers come from the provider or from whoever sent a
    delivery; printed raw, an escape sequence in them would drive the operator's terminal
    (rewrite lines, set a hyperlink, change the title). Our own text has no control
    characters, so escaping a whole line escapes exactly the data in it. Line breaks and tabs
    are kept. JSON output needs nothing: its encoder escapes control characters already.
    """
    click.echo(None if message is None else printable(str(message), keep_newlines=True), **options)


def shown_time(value: datetime | str | None, *, missing: str = "never") -> str:
    """A time as every command prints it for people: `2026-11-26 19:16:21 UTC`.

    To the second (microseconds help nobody reading), always UTC whatever the machine's zone,
    and said `UTC` rather than `Z`, which not every reader knows. ISO text (a summary's JSON
    value) is read first, so a command never prints a time as the machine wrote it. The format
    is `foundation.readable.moment`'s, the one report text and alert subjects use, so a time
    read in a report and in a command's own line is the same string.
    """
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment(value, missing=missing)


def shown_time_and_age(value: datetime | None, now: datetime) -> str:
    """`2026-11-26 19:16:21 UTC (3 min ago)`: the time, and how long ago, side by side."""
    if value is None:
        return shown_time(None)
    return f"{shown_time(value)} ({time_ago(value, now)})"


def took(seconds: dict[str, float], *, each: bool) -> str:
    """How long a run took: in all (`1.23s`), or with `each`, phase by phase (`match 0.50s, ...`)."""
    if each:
        return ", ".join(f"{phase} {value:.2f}s" for phase, value in seconds.items())
    return f"{sum(seconds.values()):.2f}s"
