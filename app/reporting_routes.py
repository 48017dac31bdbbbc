"""Reports and alerts over HTTP (admin token): thin handlers over `reconciliation` services.

`app.main.create_app` mounts `ROUTE_HANDLERS` behind `app.auth.admin_guard`. Every handler
parses its input, calls one service, and turns the service's own errors into 400/404 with the
service's message, so the API and the CLI say the same thing about the same mistake. Changes
to an alert, and every report taken, go through the operator service (`app.operator_door`),
audited as from `api`.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec
from litestar import Response, get, post
from litestar.datastructures import State
from litestar.exceptions import ValidationException
from litestar.params import JSONBody, QueryParameter
from sqlalchemy.orm import Session, sessionmaker

from app import state_keys
from app.operator_door import perform
from app.path_ids import RowId
from app.report_formats import FORMATS, STYLE, check_format, render
from app.response_headers import policy_with_inline_style
from reconciliation import ReconcilePolicy
from reconciliation.alerts import AlertError, alert_as_dict, list_alerts
from reconciliation.operator import actions
from reconciliation.reports import ReportAsked, ReportError
from reconciliation.store import transaction

#: `app.state` key of a ReconcilePolicy, when the app factory provides one; else the defaults.
POLICY_STATE_KEY: Final = "reconcile_policy"

#: The HTML report's policy: its one inline stylesheet (it must stand alone when saved) allowed
#: by hash, nothing else inline.
HTML_REPORT_POLICY: Final = policy_with_inline_style(STYLE)

#: Most alerts one list call returns.
MAX_ALERTS: Final = 500


class AlertAction(msgspec.Struct):
    """Who acknowledges or resolves, and why (both kept in the audit trail; a missing note is
    refused by the operator service with the same words in every door)."""

    by: str
    note: str | None = None


def _factory(state: State) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = state[state_keys.SESSION_FACTORY]
    return factory


@get("/reports/reconciliation", sync_to_thread=True, tags=["reports"])
def reconciliation_report(
    state: State,
    since: Annotated[str | None, QueryParameter(description="ISO 8601 time or date")] = None,
    until: Annotated[str | None, QueryParameter(description="ISO 8601 time or date")] = None,
    holding: Annotated[
        str | None,
        QueryParameter(description="account number, part of an account name, or holdingRef"),
    ] = None,
    report_format: Annotated[
        str, QueryParameter(name="format", description="text, json, csv or html")
    ] = "json",
    section: Annotated[
        str | None, QueryParameter(description="CSV only: one section (default items)")
    ] = None,
    by: Annotated[
        str | None, QueryParameter(description="who takes the report, for the audit trail")
    ] = None,
) -> Response[str]:
    """The reconciliation report: totals, open exceptions by age, alerts, balance drift. Each
    answer is a download, recorded in the audit trail as taken by `by` (else the admin token)."""
    policy: ReconcilePolicy = state.get(POLICY_STATE_KEY) or ReconcilePolicy()
    try:
        check_format(report_format, section)
    except ReportError as exc:
        raise ValidationException(detail=str(exc)) from None
    asked = ReportAsked(report_format, section, since, until, holding)
    media_type, _ = FORMATS[report_format]
    return Response(
        content=perform(
            state,
            by,
            actions.download_report,
            asked,
            policy,
            lambda report: render(report, report_format, section=section),
        ),
        media_type=media_type,
        headers=report_headers(report_format),
    )


def report_headers(report_format: str) -> dict[str, str]:
    """Headers of a report answer beyond app.response_headers: the HTML report's own policy."""
    return {"content-security-policy": HTML_REPORT_POLICY} if report_format == "html" else {}


@get("/alerts", sync_to_thread=True, tags=["alerts"])
def alerts(
    state: State,
    alert_state: Annotated[
        str | None,
        QueryParameter(name="state", description="open, acknowledged, resolved or active"),
    ] = None,
    kind: Annotated[str | None, QueryParameter(description="alert kind")] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=MAX_ALERTS)] = 100,
) -> list[dict[str, Any]]:
    """Alerts, most urgent and newest first; a kind recon never raises is a 400 listing them."""
    from reconciliation.operator import UnknownAlertKindError, checked_kind

    try:
        if kind is not None:
            checked_kind(kind)
        with transaction(_factory(state)) as session:
            return [
                alert_as_dict(a)
                for a in list_alerts(session, state=alert_state, kind=kind, limit=limit)
            ]
    except (AlertError, UnknownAlertKindError) as exc:
        raise ValidationException(detail=str(exc)) from None


@post("/alerts/{alert_id:int}/ack", sync_to_thread=True, status_code=200, tags=["alerts"])
def acknowledge(state: State, alert_id: RowId, data: JSONBody[AlertAction]) -> dict[str, Any]:
    """A person has seen the alert and owns it (recorded in the audit trail under `by`)."""
    return alert_as_dict(perform(state, data.by, actions.acknowledge, alert_id, data.note))


@post("/alerts/{alert_id:int}/resolve", sync_to_thread=True, status_code=200, tags=["alerts"])
def resolve(state: State, alert_id: RowId, data: JSONBody[AlertAction]) -> dict[str, Any]:
    """A person closes the alert (it reopens if its condition clears and comes back)."""
    return alert_as_dict(perform(state, data.by, actions.resolve, alert_id, data.note))


#: Mounted by app.main.create_app behind the admin guard.
ROUTE_HANDLERS: Final = [reconciliation_report, alerts, acknowledge, resolve]
