"""How wide the command's output may be: the terminal's width, or unlimited through a pipe.

A person at a terminal needs tables that fit the window; a script reading a pipe needs every
value whole. So the width is the terminal's when standard output is one, `--width` when the
person says so (for a file they will read in a given window), and None (no limit) otherwise.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any, Final

import click

from foundation.printable import printable

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


def say(message: object = None, **options: Any) -> None:
    """`click.echo` for text a person reads: control characters in it are shown as escapes.

    Ids, references, narrations and headers come from the provider or from whoever sent a
    delivery; printed raw, an escape sequence in them would drive the operator's terminal
    (rewrite lines, set a hyperlink, change the title). Our own text has no control
    characters, so escaping a whole line escapes exactly the data in it. Line breaks and tabs
    are kept. JSON output needs nothing: its encoder escapes control characters already.
    """
    click.echo(None if message is None else printable(str(message), keep_newlines=True), **options)
