"""The sections that say what a report covers and how it judged: its window, the last ledger
audit, the legend. CSV tables of their own (`--section window|audit|legend`); text and HTML
say the same in sentences above the figures, so these are `people=False`.
"""

from __future__ import annotations

from datetime import datetime

from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.legend import legend_terms
from reconciliation.reports.model import Report
from reconciliation.reports.tables import AccountNumber, Cell, Column, Section


def window(report: Report) -> Section:
    """What the report covers and how it judged (CSV; text and HTML say it in a sentence)."""
    scope = report.scope or HoldingIdentity(ref="")
    rows: list[tuple[Cell, ...]] = [
        ("since", report.window.since or ""),
        ("until", report.window.until),
        ("generated_at", report.generated_at),
        ("grace_seconds", str(report.grace_seconds)),
        ("finality_seconds", str(report.finality_seconds)),
        ("items_unmatched", str(report.figures()["unmatched"])),
        ("items_listed", str(len(report.open_items))),
        ("holding_account_number", AccountNumber(scope.account_number or "")),
        ("holding_name", scope.account_name or ""),
        ("holding_ref", scope.ref),
    ]
    return Section(
        key="window",
        title="Window",
        columns=(Column("name", "name"), Column("value", "value")),
        rows=tuple(rows),
        empty="",
        people=False,
    )


def audit(report: Report) -> Section:
    """The last ledger audit: its sentence, then (once one finished) its figures."""
    rows: list[tuple[Cell, ...]] = [("line", report.audit_line())]
    found = report.last_audit
    if found is not None:
        facts: list[tuple[str, object]] = [
            ("run", found.run_id),
            ("finished_at", found.finished_at),
            ("status", found.status),
            ("holdings", found.holdings),
            ("postings", found.postings),
            ("first_day", found.first_day.isoformat() if found.first_day else ""),
            ("last_day", found.last_day.isoformat() if found.last_day else ""),
            ("divergences", found.divergences),
            ("missing", found.missing),
            ("unknown", found.unknown),
            ("differing", found.differing),
            ("partial", int(found.partial)),
        ]
        rows += [
            (metric, value if isinstance(value, datetime) else str(value))
            for metric, value in facts
        ]
    return Section(
        key="audit",
        title="Last ledger audit",
        columns=(Column("metric", "metric"), Column("value", "value")),
        rows=tuple(rows),
        empty="",
        people=False,
    )


def legend_section(report: Report) -> Section:
    return Section(
        key="legend",
        title="What the figures count",
        columns=(Column("term", "term"), Column("definition", "definition", prose=True)),
        rows=tuple(legend_terms(report.grace_seconds)),
        empty="",
        people=False,
    )
