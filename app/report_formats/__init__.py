"""The reconciliation report in each format a door offers: JSON and CSV for machines (drawn in
`reconciliation.reports`), text and HTML for people (drawn here, from the same sections).

The web process serves every format (the API, the console's Reports page and downloads), and
the roof's `recon report` and demo use the same renderers through this surface, so a format
reads the same whichever door it left by.
"""

from __future__ import annotations

from typing import Final

from app.report_formats.html import STYLE, render_body, render_html
from app.report_formats.text import render_text
from reconciliation.reports import SECTION_NAMES, Report, ReportError, render_csv, render_json

#: Format name -> (media type, file name extension): the CLI, the API and the console offer
#: exactly these. No charset: the web framework adds `; charset=utf-8` to every text type itself
#: (twice, when it was here).
FORMATS: Final = {
    "text": ("text/plain", "txt"),
    "json": ("application/json", "json"),
    "csv": ("text/csv", "csv"),
    "html": ("text/html", "html"),
}


def check_format(fmt: str, section: str | None = None) -> None:
    """ReportError unless `fmt` is a format and `section` (CSV only) one of its sections: asked
    before the report is built, so a typo costs nothing."""
    if fmt not in FORMATS:
        raise ReportError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if section is None:
        return
    if fmt != "csv":
        raise ReportError(
            f"a section ({section!r}) is for CSV only: {fmt} holds every section; "
            "drop the section or ask for csv"
        )
    if section not in SECTION_NAMES:
        raise ReportError(f"CSV section {section!r} is not one of {', '.join(SECTION_NAMES)}")


def render(
    report: Report, fmt: str, *, width: int | None = None, section: str | None = None
) -> str:
    """The report in `fmt`; `width` lays text out for a terminal that wide (else unlimited);
    `section` picks the one section a CSV holds (default `items`; other formats hold them all)."""
    check_format(fmt, section)
    if fmt == "text":
        return render_text(report, width)
    if fmt == "csv":
        return render_csv(report, section)
    return render_json(report) if fmt == "json" else render_html(report)


__all__ = ["FORMATS", "STYLE", "check_format", "render", "render_body"]
