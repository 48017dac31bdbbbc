"""Reconciliation reports: one query (`build_report`), one renderer per format (`render`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from reconciliation.reports.csv_format import render_csv
from reconciliation.reports.fees import fee_figures
from reconciliation.reports.figures import CSV_ITEMS_LISTED, OPEN_ITEMS_LISTED
from reconciliation.reports.html_format import STYLE, render_body, render_html
from reconciliation.reports.model import FeeTotal, Report, ReportWindow
from reconciliation.reports.query import ReportError, build_report
from reconciliation.reports.sections import DEFAULT_CSV_SECTION, SECTION_NAMES
from reconciliation.reports.text import render_text
from reconciliation.reports.window import parse_moment, parse_window
from reconciliation.reports.wire import report_as_dict


def render_json(report: Report) -> str:
    return json.dumps(report_as_dict(report), indent=2) + "\n"


#: Format name -> (renderer, media type): the CLI and the API offer exactly these. No charset:
#: the web framework adds `; charset=utf-8` to every text type itself (twice, when it was here).
FORMATS: Final[dict[str, tuple[Callable[[Report], str], str]]] = {
    "text": (render_text, "text/plain"),
    "json": (render_json, "application/json"),
    "csv": (render_csv, "text/csv"),
    "html": (render_html, "text/html"),
}


def items_listed(fmt: str, section: str | None = None) -> int:
    """How many unmatched items a report in `fmt` lists one by one, oldest first: up to
    CSV_ITEMS_LISTED in the CSV of items (a spreadsheet is where a person works through them),
    OPEN_ITEMS_LISTED elsewhere. Every format counts them all."""
    if fmt == "csv" and (section or DEFAULT_CSV_SECTION) == "items":
        return CSV_ITEMS_LISTED
    return OPEN_ITEMS_LISTED


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
    renderer, _ = FORMATS[fmt]
    return renderer(report)


__all__ = [
    "DEFAULT_CSV_SECTION",
    "FORMATS",
    "OPEN_ITEMS_LISTED",
    "SECTION_NAMES",
    "STYLE",
    "FeeTotal",
    "Report",
    "ReportError",
    "ReportWindow",
    "build_report",
    "check_format",
    "fee_figures",
    "items_listed",
    "parse_moment",
    "parse_window",
    "render",
    "render_body",
    "report_as_dict",
]
