"""The sections that say what the figures are, what a report covers and how it judged: the
figures themselves (`summary`, each with what it counts), its window, the last ledger audit,
the legend. The last three are CSV tables of their own (`--section window|audit|legend`); text
and HTML say the same in sentences above the figures, so these are `people=False`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.legend import legend_terms
from reconciliation.reports.model import Report
from reconciliation.reports.tables import NAME, AccountNumber, Cell, Column, Section, count_column


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
    return _csv_only("window", "Window", ("name", "value"), rows)


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
    return _csv_only("audit", "Last ledger audit", ("metric", "value"), rows)


def legend_section(report: Report) -> Section:
    terms = legend_terms(report.grace_seconds)
    return _csv_only("legend", "What the figures count", ("term", "definition"), terms)


def _csv_only(
    key: str, title: str, names: tuple[str, str], rows: Iterable[tuple[Cell, ...]]
) -> Section:
    """A table of name and value that only CSV draws (text and HTML say it in sentences); its
    second column may wrap."""
    name, value = names
    return Section(
        key=key,
        title=title,
        columns=(Column(name, name), Column(value, value, prose=True)),
        rows=tuple(rows),
        empty="",
        people=False,
    )


#: Figure name (as in `Report.figures`) -> how it reads in the figures table.
FIGURE_LABELS: Final = {
    "holdings": "holdings",
    "items": "items in the window",
    "matched": "matched",
    "accepted": "accepted without a counterpart",
    "unmatched": "unmatched (waiting + exceptions)",
    "waiting": "  waiting",
    "exceptions": "  exceptions",
    "transfersSettled": "transfers settled",
    "transfersInFlight": "transfers in flight",
    "transfersRefused": "transfers refused",
    "transfersFailed": "transfers failed",
    "openAlerts": "alerts open now",
    "alertsOpened": "alerts opened in the window",
    "alertsResolved": "alerts resolved in the window",
    "holdingsDrifting": "holdings whose balance drifts",
}

#: Figure -> the legend term that defines it (figures without one are plain counts).
FIGURE_TERMS: Final = {"openAlerts": "openAlerts"}

#: Figures whose meaning is their own sentence (the legend defines their family once; a CSV row
#: per figure repeating the family's definition said nothing about the row).
FIGURE_MEANINGS: Final = {
    "holdings": "holdings with an item in the window",
    "transfersSettled": "transfers we asked for that the provider says are terminal and successful",
    "transfersInFlight": "transfers we asked for that are not terminal yet at the provider",
    "transfersRefused": "transfers the provider denied at creation: nothing moved",
    "transfersFailed": "transfers the provider says are terminal and not successful",
    "alertsOpened": "alerts opened in the window, whatever their state now",
    "alertsResolved": "alerts resolved in the window",
    "holdingsDrifting": "holdings whose latest balance differs from the sum of their postings "
    "by more than transfers in flight explain",
}

#: What each figure counts, so a spreadsheet never adds transfers or alerts to items: the
#: transfers are also items (each counted once among them), the alerts are conditions.
FIGURE_COUNTS: Final = {
    "holdings": "holdings",
    "holdingsDrifting": "holdings",
    "transfersSettled": "transfers",
    "transfersInFlight": "transfers",
    "transfersRefused": "transfers",
    "transfersFailed": "transfers",
    "openAlerts": "alerts",
    "alertsOpened": "alerts",
    "alertsResolved": "alerts",
}


#: The figures' section: text and HTML follow it with the legend.
SUMMARY: Final = "summary"


def summary(report: Report) -> Section:
    """The headline numbers, each with the legend's words for what it counts."""
    meanings = dict(legend_terms(report.grace_seconds))
    return Section(
        key=SUMMARY,
        title="Figures",
        columns=(
            Column("figure", "figure", NAME, people=False),
            Column("label", "figure", machines=False),
            count_column("value", "count"),
            Column("meaning", "what it counts", prose=True, people=False),
            Column("counts", "unit", NAME, people=False),
        ),
        rows=tuple(
            (
                name,
                FIGURE_LABELS.get(name, name),
                value,
                FIGURE_MEANINGS.get(name) or meanings.get(FIGURE_TERMS.get(name, name), ""),
                FIGURE_COUNTS.get(name, "items"),
            )
            for name, value in report.figures().items()
        ),
        empty="Figures: none.",
    )
