"""A report as a door asks for it: the window as a person typed it, the format, the CSV section.

The CLI, the API and the console read the same words the same way (`parse_window`), list the
same number of items for a format (`items_listed`), judge by the grace and deadline the passes
run with (`build_asked`), and describe a download the same way in the audit trail.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from reconciliation.policy import ReconcilePolicy
from reconciliation.reports.figures import CSV_ITEMS_LISTED, OPEN_ITEMS_LISTED
from reconciliation.reports.model import Report
from reconciliation.reports.query import build_report
from reconciliation.reports.sections import DEFAULT_CSV_SECTION
from reconciliation.reports.window import parse_window


def items_listed(fmt: str, section: str | None = None) -> int:
    """How many unmatched items a report in `fmt` lists one by one, oldest first: up to
    CSV_ITEMS_LISTED in the CSV of items (a spreadsheet is where a person works through them),
    OPEN_ITEMS_LISTED elsewhere. Every format counts them all."""
    if fmt == "csv" and (section or DEFAULT_CSV_SECTION) == "items":
        return CSV_ITEMS_LISTED
    return OPEN_ITEMS_LISTED


@dataclass(frozen=True, slots=True)
class ReportAsked:
    """`since`, `until` and `holding` as typed (None: from the start, until now, every
    holding); `section` is the one section a CSV holds (None: its default)."""

    fmt: str
    section: str | None = None
    since: str | None = None
    until: str | None = None
    holding: str | None = None

    def described(self, report: Report) -> str:
        """The download as the audit trail names it: format, window, and the holding found."""
        return (
            f"report {self.fmt}{f' {self.section}' if self.section else ''} "
            f"since {self.since or 'the start'} until {self.until or 'now'}"
            + (f" holding {report.scope.label} ({report.scope.ref})" if report.scope else "")
        )


def build_asked(
    session: Session, asked: ReportAsked, rules: ReconcilePolicy, now: datetime
) -> Report:
    """The report asked for, judged by the grace and finality deadline the passes run with
    (so the report never calls waiting what an alert calls late); ReportError when the window
    or the holding cannot be read."""
    return build_report(
        session,
        parse_window(asked.since, asked.until, asked.holding, now),
        grace_seconds=rules.notification_grace_seconds,
        finality_seconds=rules.finality_deadline_seconds,
        items_listed=items_listed(asked.fmt, asked.section),
    )
