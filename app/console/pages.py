"""Overview, holdings, reports and the audit trail: read-only pages (a report download is
recorded in the audit trail).

The reports page shows the reconciliation report itself (`build_report`, the one definition of
every figure) but only for a view that answers at once: one holding over at most
`ON_PAGE_DAYS`. Over every holding, or a longer window, the report counts every item in it
(seconds to a minute over a million items), so the page offers it as a download instead and
says so; the download is the same report, uncapped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Final

from litestar import Controller, Request, Response, get
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromQuery, QueryParameter
from litestar.response import Template
from sqlalchemy.orm import Session

from app.console.chart import balance_chart
from app.console.rendering import operator, page, policy, read
from app.console.session import console_guard
from app.path_ids import RowId
from app.reporting_routes import report_headers
from reconciliation.ledger_audit.compare import DIFFERS, MISSING, UNKNOWN
from reconciliation.ledger_audit.summary import AuditSummary, last_audit
from reconciliation.operator import actions as operator_actions
from reconciliation.operator import audit_trail as audit
from reconciliation.operator.overview import Overview, read_overview
from reconciliation.policy import ReconcilePolicy
from reconciliation.postings.holding_history import (
    HoldingError,
    HoldingList,
    HoldingView,
    holding_view,
    list_holdings,
)
from reconciliation.reports import FORMATS, Report, ReportError, build_report, parse_window, render
from reconciliation.reports.fees import fee_figures
from reconciliation.reports.model import FeeTotal, ReportWindow
from reconciliation.store.types import utcnow

AnyRequest = Request[Any, Any, Any]

#: File name extension per report format, for downloads.
EXTENSIONS: Final = {"text": "txt", "json": "json", "csv": "csv", "html": "html"}
#: Longest window the page shows the report for (one holding): a week from whichever midnight it
#: starts at. That much of one holding is read through its indexes in milliseconds (given the
#: holding indexes on notifications and transfers); longer windows are downloads.
ON_PAGE_DAYS: Final = 8
#: The window the page starts with: the last day.
DEFAULT_DAYS: Final = 1
#: The ledger audit's alert kinds, each with the word the overview's audit tile shows for it
#: (the `AuditSummary` field counting it): the tile links to the alerts page filtered to each.
AUDIT_ALERT_WORDS: Final = ((MISSING, "missing"), (UNKNOWN, "unknown"), (DIFFERS, "differing"))


@dataclass(frozen=True, slots=True)
class ReportView:
    """The report for the page, or (report None) why the page offers only downloads."""

    report: Report | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class OverviewView:
    """The overview's health figures and the last ledger audit, read in one transaction."""

    figures: Overview
    audit: AuditSummary | None

    @property
    def audit_links(self) -> list[tuple[str, str]]:
        """(alerts page filtered to one audit kind, its words): what explains the audit tile."""
        links = []
        for kind, word in AUDIT_ALERT_WORDS:
            found = getattr(self.audit, word) if self.audit is not None else None
            text = f"{found:,} {word}" if found is not None else word
            links.append((f"/console/alerts?kind={kind}", text))
        return links


def _overview(session: Session, rules: ReconcilePolicy) -> OverviewView:
    figures = read_overview(
        session,
        now=utcnow(),
        grace_seconds=rules.notification_grace_seconds,
        finality_seconds=rules.finality_deadline_seconds,
    )
    return OverviewView(figures, last_audit(session))


def _holdings(session: Session, after: int | None, ref: str | None) -> HoldingList:
    try:
        return list_holdings(session, after=after, ref=ref)
    except HoldingError as exc:
        raise ValidationException(detail=str(exc)) from None


def _holding(
    session: Session, holding_id: int, cursor: str | None
) -> tuple[HoldingView, list[FeeTotal]]:
    """The holding's page, and the fees of its settled transfers over the page's window (the
    report's own figures, `reconciliation.reports.fees`)."""
    try:
        view = holding_view(session, holding_id, cursor=cursor)
    except HoldingError as exc:
        raise NotFoundException(detail=str(exc)) from None
    now = utcnow()
    window = ReportWindow(until=now, since=now - timedelta(days=ON_PAGE_DAYS))
    return view, fee_figures(session, window, holding_id)


def _report(
    session: Session,
    since: str | None,
    until: str | None,
    holding: str | None,
    rules: ReconcilePolicy,
) -> Report:
    try:
        return build_report(
            session,
            parse_window(since, until, holding, utcnow()),
            grace_seconds=rules.notification_grace_seconds,
            finality_seconds=rules.finality_deadline_seconds,
        )
    except ReportError as exc:
        raise ValidationException(detail=str(exc)) from None


def _on_page(
    session: Session,
    since: str | None,
    until: str | None,
    holding: str | None,
    rules: ReconcilePolicy,
) -> ReportView:
    """The report when the window is one holding and at most ON_PAGE_DAYS; else why not."""
    try:
        window = parse_window(since, until, holding, utcnow())
    except ReportError as exc:
        raise ValidationException(detail=str(exc)) from None
    if window.holding is None:
        return ReportView(None, "it covers every holding")
    if window.since is None or window.until - window.since > timedelta(days=ON_PAGE_DAYS):
        return ReportView(None, f"its window is longer than {ON_PAGE_DAYS} days")
    return ReportView(_report(session, since, until, holding, rules), None)


def _download(
    session: Session,
    who: str,
    fmt: str,
    window: tuple[str | None, str | None, str | None],
    rules: ReconcilePolicy,
) -> str:
    if fmt not in FORMATS:
        raise ValidationException(detail=f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    since, until, holding = window
    text = render(_report(session, since, until, holding, rules), fmt)
    described = f"report {fmt} since {since or 'the start'} until {until or 'now'}" + (
        f" holding {holding}" if holding else ""
    )
    operator_actions.report_downloaded(session, who, described)
    return text


class ReadPages(Controller):
    path = "/"
    guards = [console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @get("/", sync_to_thread=True)
    def overview(self, request: AnyRequest) -> Template:
        """Is recon healthy right now; the audit tile links to the audit's alerts, by kind."""
        view = read(request, _overview, policy(request))
        return page(
            request,
            "overview.html",
            o=view.figures,
            audit=view.audit,
            audit_links=view.audit_links,
        )

    @get("/holdings", sync_to_thread=True)
    def holdings(
        self,
        request: AnyRequest,
        after: FromQuery[int | None] = None,
        ref: FromQuery[str | None] = None,
    ) -> Template:
        """Every holding a page at a time, with its cursor's state."""
        return page(
            request, "holdings.html", found=read(request, _holdings, after, ref or None), ref=ref
        )

    @get("/holdings/{holding_id:int}", sync_to_thread=True)
    def holding(
        self, request: AnyRequest, holding_id: RowId, cursor: FromQuery[str | None] = None
    ) -> Template:
        """Balance against posted sum, drift history, postings."""
        view, fees = read(request, _holding, holding_id, cursor)
        return page(
            request,
            "holding.html",
            view=view,
            fees=fees,
            fee_days=ON_PAGE_DAYS,
            chart=balance_chart(view.checks, view.holding.currency),
        )

    @get("/reports", sync_to_thread=True)
    def reports(
        self,
        request: AnyRequest,
        since: FromQuery[str | None] = None,
        until: FromQuery[str | None] = None,
        holding: FromQuery[str | None] = None,
    ) -> Template:
        """Choose a window and a holding; the report on the page (one holding, a short
        window), and downloads of any window."""
        default_since = (utcnow() - timedelta(days=DEFAULT_DAYS)).replace(microsecond=0)
        chosen = {
            "since": since if since is not None else default_since.isoformat(),
            "until": until or "",
            "holding": (holding or "").strip(),
        }
        view = read(
            request,
            _on_page,
            chosen["since"] or None,
            until or None,
            chosen["holding"] or None,
            policy(request),
        )
        return page(
            request,
            "reports.html",
            chosen=chosen,
            text=render(view.report, "text") if view.report else None,
            reason=view.reason,
            on_page_days=ON_PAGE_DAYS,
            formats=FORMATS,
        )

    @get("/reports/download", sync_to_thread=True)
    def download(
        self,
        request: AnyRequest,
        report_format: Annotated[str, QueryParameter(name="format")] = "text",
        since: FromQuery[str | None] = None,
        until: FromQuery[str | None] = None,
        holding: FromQuery[str | None] = None,
    ) -> Response[str]:
        """The report as a file, recorded in the audit trail."""
        text = read(
            request,
            _download,
            operator(request).name,
            report_format,
            (since or None, until or None, holding or None),
            policy(request),
        )
        name = f"recon-report-{utcnow():%Y%m%d-%H%M%S}.{EXTENSIONS.get(report_format, 'txt')}"
        return Response(
            content=text,
            media_type=FORMATS[report_format][1],
            headers={
                "Content-Disposition": f'attachment; filename="{name}"',
                **report_headers(report_format),
            },
        )

    @get("/audit", sync_to_thread=True)
    def audit_trail(
        self,
        request: AnyRequest,
        before: FromQuery[int | None] = None,
        subject: FromQuery[str | None] = None,
    ) -> Template:
        """Who did what, newest first."""
        found = read(request, audit.recent, subject=subject or None, before=before)
        return page(request, "audit.html", found=found, subject=subject)
