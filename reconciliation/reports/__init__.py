"""Reconciliation reports: one query (`build_report`), one model of its sections
(`build_sections`), and the two formats for machines (`render_json`, `render_csv`).

The formats for people (text for a terminal, HTML for a browser) draw the same sections in the
processes that show them (`app.report_formats`); nothing here renders for a terminal or a
browser (an import-linter contract keeps `rich` out of `reconciliation`).
"""

from __future__ import annotations

from reconciliation.reports.asked import ReportAsked, build_asked, items_listed
from reconciliation.reports.context_sections import SUMMARY
from reconciliation.reports.csv_format import render_csv
from reconciliation.reports.fees import fee_figures
from reconciliation.reports.figures import OPEN_ITEMS_LISTED
from reconciliation.reports.legend import grace_words, legend_terms
from reconciliation.reports.model import (
    AGEING_BUCKETS,
    STREAMS,
    FeeTotal,
    Report,
    ReportWindow,
)
from reconciliation.reports.query import ReportError, build_report
from reconciliation.reports.sections import DEFAULT_CSV_SECTION, SECTION_NAMES, build_sections
from reconciliation.reports.tables import (
    AMOUNTS,
    COUNT,
    COUNTED,
    MOMENT,
    MONEY,
    NAME,
    Cell,
    Column,
    Counted,
    Money,
    Section,
)
from reconciliation.reports.window import parse_moment, parse_window
from reconciliation.reports.wire import render_json, report_as_dict

__all__ = [
    "AGEING_BUCKETS",
    "AMOUNTS",
    "COUNT",
    "COUNTED",
    "DEFAULT_CSV_SECTION",
    "MOMENT",
    "MONEY",
    "NAME",
    "OPEN_ITEMS_LISTED",
    "SECTION_NAMES",
    "STREAMS",
    "SUMMARY",
    "Cell",
    "Column",
    "Counted",
    "FeeTotal",
    "Money",
    "Report",
    "ReportAsked",
    "ReportError",
    "ReportWindow",
    "Section",
    "build_asked",
    "build_report",
    "build_sections",
    "fee_figures",
    "grace_words",
    "items_listed",
    "legend_terms",
    "parse_moment",
    "parse_window",
    "render_csv",
    "render_json",
    "report_as_dict",
]
