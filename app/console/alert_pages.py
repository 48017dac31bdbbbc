"""Alerts: the filtered list, one alert with its evidence side by side, acknowledge, resolve."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromQuery, QueryParameter
from litestar.response import Template
from sqlalchemy.orm import Session

import app.console.forms as form_fields
from app.console.rendering import Change, Outcome, act, page, read
from app.console.session import console_guard
from app.path_ids import RowId
from reconciliation.alerts import SEVERITIES, STATES, AlertNotFoundError
from reconciliation.operator import (
    AGES,
    AlertFilter,
    AlertPage,
    BrowseError,
    Evidence,
    OperatorService,
    alert_page,
    evidence_of,
)
from reconciliation.operator import actions as operator_actions
from reconciliation.postings import HoldingIdentity, holding_identities
from reconciliation.store import utcnow

AnyRequest = Request[Any, Any, Any]


def _list(session: Session, chosen: AlertFilter, cursor: str | None) -> AlertPage:
    try:
        return alert_page(session, chosen, now=utcnow(), cursor=cursor)
    except BrowseError as exc:
        raise ValidationException(detail=str(exc)) from None


def _evidence(session: Session, alert_id: int) -> tuple[Evidence, dict[str, HoldingIdentity]]:
    """The alert with its items, and how people name the items' holdings."""
    try:
        found = evidence_of(session, alert_id)
    except AlertNotFoundError as exc:
        raise NotFoundException(detail=str(exc)) from None
    refs = [i.holding_ref for items in found.items.values() for i in items if i.holding_ref]
    return found, holding_identities(session, refs)


def _acknowledge(alert_id: int) -> Change:
    def change(acting: OperatorService, form: FormMultiDict) -> Outcome:
        acting.perform(operator_actions.acknowledge, alert_id, form_fields.text(form, "comment"))
        return Outcome(f"/console/alerts/{alert_id}", "acknowledged")

    return change


def _resolve(alert_id: int) -> Change:
    def change(acting: OperatorService, form: FormMultiDict) -> Outcome:
        acting.perform(operator_actions.resolve, alert_id, form_fields.text(form, "comment"))
        return Outcome(f"/console/alerts/{alert_id}", "resolved")

    return change


class AlertPages(Controller):
    path = "/alerts"
    guards = [console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @get("/", sync_to_thread=True)
    def alerts(
        self,
        request: AnyRequest,
        alert_state: Annotated[str | None, QueryParameter(name="state")] = "active",
        kind: FromQuery[str | None] = None,
        severity: FromQuery[str | None] = None,
        age: FromQuery[str | None] = None,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """Alerts newest first, filtered by kind, severity, state and age."""
        chosen = AlertFilter(alert_state or None, kind or None, severity or None, age or None)
        found = read(request, _list, chosen, cursor)
        return page(
            request,
            "alerts.html",
            found=found,
            chosen=chosen,
            severities=SEVERITIES,
            states=STATES,
            ages=AGES,
        )

    @get("/{alert_id:int}", sync_to_thread=True)
    def alert(self, request: AnyRequest, alert_id: RowId) -> Template:
        """One alert: what, since when, and the items its evidence names, side by side."""
        view, holdings = read(request, _evidence, alert_id)
        return page(request, "alert.html", view=view, holdings=holdings)

    @post("/{alert_id:int}/acknowledge")
    async def acknowledge(self, request: AnyRequest, alert_id: RowId) -> Response[Any]:
        return await act(request, _acknowledge(alert_id), f"/console/alerts/{alert_id}")

    @post("/{alert_id:int}/resolve")
    async def resolve(self, request: AnyRequest, alert_id: RowId) -> Response[Any]:
        return await act(request, _resolve(alert_id), f"/console/alerts/{alert_id}")
