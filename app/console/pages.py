"""Overview, holdings, reports and the audit trail: read-only pages (a report download is
recorded in the audit trail).

The reports page shows the reconciliation report itself (`build_report`, the one definition of
every figure) but only for a view that answers at once: one holding over at most
`ON_PAGE_DAYS`. Over every holding, or a longer window, the report counts every item in it
(seconds to a minute over a million items), so the page offers it as a download instead, and
lists the holdings to pick one from: by account number and name, each a link to its report.
The holding field takes what people know (an account number, part of a name, a holdingRef),
read by the one resolver every door uses (`reconciliation.postings.holding_identity`); text
naming several holdings lists them to pick from instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Final

from litestar import Controller, Request, Response, get
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromQuery, QueryParameter
from litestar.response import Template
from markupsafe import Markup
from sqlalchemy.orm import Session

from app import state_keys
from app.console.chart import balance_chart
from app.console.rendering import answered, page, policy, read, service
from app.console.session import console_guard
from app.path_ids import QueryRowId, RowId
from app.report_formats import FORMATS, check_format, render, render_body
from app.reporting_routes import report_headers
from reconciliation import ReconcilePolicy
from reconciliation.ledger_audit import DIFFERS, MISSING, UNKNOWN, AuditSummary, last_audit
from reconciliation.operator import ActionRefusedError, Overview, read_overview, recent_audit
from reconciliation.operator import actions as operator_actions
from reconciliation.postings import (
    HoldingError,
    HoldingIdentity,
    HoldingView,
    ReadBudget,
    find_holdings,
    holding_identities,
    holding_view,
    list_holdings,
    list_identities,
    stored_ceiling_shortfall,
)
from reconciliation.reports import (
    DEFAULT_CSV_SECTION,
    SECTION_NAMES,
    FeeTotal,
    Report,
    ReportAsked,
    ReportError,
    ReportWindow,
    build_asked,
    fee_figures,
    parse_window,
)
from reconciliation.store import utcnow

AnyRequest = Request[Any, Any, Any]

#: Longest window the page shows the report for (one holding): a week from whichever midnight it
#: starts at. That much of one holding is read through its indexes in milliseconds (given the
#: holding indexes on notifications and transfers); longer windows are downloads.
ON_PAGE_DAYS: Final = 8
#: The window the page starts with: the last day.
DEFAULT_DAYS: Final = 1
#: How the Reports page writes its default "since": a time a person reads and types back
#: (`parse_moment` takes it: a space for the T, minutes, Z for UTC), never a raw ISO text
#: cut off by the field's width.
SINCE_SHOWN: Final = "%Y-%m-%d %H:%MZ"
#: Holdings the reports page lists to pick from: a page, as the holdings list shows; more are
#: found by typing part of an account number or name.
PICK_LISTED: Final = 50
#: The ledger audit's alert kinds, each with the word the overview's audit tile shows for it
#: (the `AuditSummary` field counting it): the tile links to the alerts page filtered to each.
AUDIT_ALERT_WORDS: Final = ((MISSING, "missing"), (UNKNOWN, "unknown"), (DIFFERS, "differing"))


@dataclass(frozen=True, slots=True)
class ReportView:
    """The report for the page, or (report None) why the page offers only downloads, with the
    holdings to pick one from (those the text named, or every one when it named none)."""

    report: Report | None
    reason: str | None
    choices: list[HoldingIdentity]
    #: More holdings than `choices` lists: the person narrows them by typing.
    more: bool = False


@dataclass(frozen=True, slots=True)
class OverviewView:
    """The overview's health figures and the last ledger audit, read in one transaction."""

    figures: Overview
    audit: AuditSummary | None
    #: holdingRef -> how people name it, for the lagging cursors listed.
    holdings: dict[str, HoldingIdentity]
    #: The staleness ceiling the gateway budget cannot hold for the holdings known, if so.
    ceiling: str | None = None

    @property
    def audit_links(self) -> list[tuple[str, str]]:
        """(alerts page filtered to one audit kind, its words): what explains the audit tile."""
        links = []
        for kind, word in AUDIT_ALERT_WORDS:
            found = getattr(self.audit, word) if self.audit is not None else None
            text = f"{found:,} {word}" if found is not None else word
            links.append((f"/console/alerts?kind={kind}", text))
        return links


def _overview(
    session: Session, rules: ReconcilePolicy, budget: ReadBudget | None = None
) -> OverviewView:
    figures = read_overview(
        session,
        now=utcnow(),
        grace_seconds=rules.notification_grace_seconds,
        finality_seconds=rules.finality_deadline_seconds,
    )
    names = holding_identities(session, [c.holding_ref for c in figures.lagging])
    shortfall = stored_ceiling_shortfall(session, budget) if budget is not None else None
    return OverviewView(
        figures, last_audit(session), names, shortfall.sentence() if shortfall else None
    )


def _holding(
    session: Session, holding_id: int, cursor: str | None
) -> tuple[HoldingView, list[FeeTotal]]:
    """The holding's page, and the fees of its settled transfers over the page's window (the
    report's own figures, `reconciliation.reports.fees`)."""
    with answered(NotFoundException, HoldingError):
        view = holding_view(session, holding_id, cursor=cursor)
    now = utcnow()
    window = ReportWindow(until=now, since=now - timedelta(days=ON_PAGE_DAYS))
    return view, fee_figures(session, window, holding_id)


def _on_page(
    session: Session,
    since: str | None,
    until: str | None,
    holding: str | None,
    rules: ReconcilePolicy,
) -> ReportView:
    """The report when the window is one holding and at most ON_PAGE_DAYS; else why not, and
    the holdings to pick from."""
    with answered(ValidationException, ReportError):
        window = parse_window(since, until, holding, utcnow())
    if window.holding is None:
        every = list_identities(session, limit=PICK_LISTED + 1)
        reason = "it covers every holding: pick one below, or download it"
        return ReportView(None, reason, every[:PICK_LISTED], len(every) > PICK_LISTED)
    found = find_holdings(session, window.holding, limit=PICK_LISTED + 1)
    if len(found) != 1:
        shown = window.holding[:80]
        if found:
            reason = f"{shown!r} names {'more than ' if len(found) > PICK_LISTED else ''}"
            reason += f"{min(len(found), PICK_LISTED)} holdings: pick one below"
        else:
            reason = (
                f"no holding matches {shown!r}: give an account number, part of an account "
                "name, or a holdingRef, or pick one below"
            )
            found = list_identities(session, limit=PICK_LISTED + 1)
        return ReportView(None, reason, found[:PICK_LISTED], len(found) > PICK_LISTED)
    if window.since is None or window.until - window.since > timedelta(days=ON_PAGE_DAYS):
        return ReportView(None, f"its window is longer than {ON_PAGE_DAYS} days", [])
    with answered(ValidationException, ReportError):
        asked = ReportAsked("html", None, since, until, found[0].ref)
        report = build_asked(session, asked, rules, utcnow())
    return ReportView(report, None, [])


class ReadPages(Controller):
    path = "/"
    guards = [console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @get("/", sync_to_thread=True)
    def overview(self, request: AnyRequest) -> Template:
        """Is recon healthy right now; the audit tile links to the audit's alerts, by kind."""
        view = read(
            request, _overview, policy(request), request.app.state.get(state_keys.READ_BUDGET)
        )
        return page(
            request,
            "overview.html",
            ceiling=view.ceiling,
            o=view.figures,
            holdings=view.holdings,
            audit=view.audit,
            audit_links=view.audit_links,
        )

    @get("/holdings", sync_to_thread=True)
    def holdings(
        self,
        request: AnyRequest,
        after: QueryRowId = None,
        search: FromQuery[str | None] = None,
    ) -> Template:
        """Every holding a page at a time (or those a search names), with its cursor's state."""
        wanted = (search or "").strip() or None
        return page(
            request,
            "holdings.html",
            found=read(request, list_holdings, after=after, search=wanted),
            search=wanted,
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
        default_since = utcnow() - timedelta(days=DEFAULT_DAYS)
        chosen = {
            # Written as a person types it (the form reads it back the same way).
            "since": since if since is not None else default_since.strftime(SINCE_SHOWN),
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
            # render_body escapes every value it writes (as the HTML report file does).
            shown=Markup(render_body(view.report)) if view.report else None,  # noqa: S704
            reason=view.reason,
            choices=view.choices,
            more=view.more,
            on_page_days=ON_PAGE_DAYS,
            formats=FORMATS,
            # The one a spreadsheet gets by default first, and chosen: unmatched items.
            csv_sections=(
                DEFAULT_CSV_SECTION,
                *(s for s in SECTION_NAMES if s != DEFAULT_CSV_SECTION),
            ),
        )

    @get("/reports/download", sync_to_thread=True)
    def download(
        self,
        request: AnyRequest,
        report_format: Annotated[str, QueryParameter(name="format")] = "text",
        section: FromQuery[str | None] = None,
        since: FromQuery[str | None] = None,
        until: FromQuery[str | None] = None,
        holding: FromQuery[str | None] = None,
    ) -> Response[str]:
        """The report as a file (a CSV: one section of it), recorded in the audit trail through
        the operator service, as every door's downloads are."""
        section = section or None
        with answered(ValidationException, ReportError, ActionRefusedError):
            check_format(report_format, section)
            text = service(request).perform(
                operator_actions.download_report,
                ReportAsked(report_format, section, since or None, until or None, holding or None),
                policy(request),
                lambda report: render(report, report_format, section=section),
            )
        part = f"-{section}" if section else ""
        media_type, extension = FORMATS[report_format]
        name = f"recon-report-{utcnow():%Y%m%d-%H%M%S}{part}.{extension}"
        return Response(
            content=text,
            media_type=media_type,
            headers={
                "Content-Disposition": f'attachment; filename="{name}"',
                **report_headers(report_format),
            },
        )

    @get("/audit", sync_to_thread=True)
    def audit_trail(
        self,
        request: AnyRequest,
        before: QueryRowId = None,
        subject: FromQuery[str | None] = None,
    ) -> Template:
        """Who did what, newest first."""
        found = read(request, recent_audit, subject=subject or None, before=before)
        return page(request, "audit.html", found=found, subject=subject)
