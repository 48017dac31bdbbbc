"""Reconciliation reports: one query (`build_report`), one renderer per format (`render`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from reconciliation.reports.csv_format import render_csv
from reconciliation.reports.html_format import render_html
from reconciliation.reports.model import Report, ReportWindow
from reconciliation.reports.query import ReportError, build_report
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


def render(report: Report, fmt: str, *, width: int | None = None) -> str:
    """The report in `fmt`; `width` lays text out for a terminal that wide (else unlimited)."""
    try:
        renderer, _ = FORMATS[fmt]
    except KeyError:
        raise ReportError(f"format {fmt!r} is not one of {', '.join(FORMATS)}") from None
    if fmt == "text":
        return render_text(report, width)
    return renderer(report)


__all__ = [
    "FORMATS",
    "Report",
    "ReportError",
    "ReportWindow",
    "build_report",
    "parse_moment",
    "parse_window",
    "render",
    "report_as_dict",
]
