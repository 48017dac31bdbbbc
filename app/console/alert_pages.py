"""Alerts: the filtered list, one alert with its evidence side by side, acknowledge, resolve."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromQuery, QueryParameter
from litestar.response import Template
from sqlalchemy.orm import Session

import app.console.forms as form_fields
from app.console.rendering import Change, Outcome, act, answered, page, read
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
    with answered(ValidationException, BrowseError):
        return alert_page(session, chosen, now=utcnow(), cursor=cursor)


def _evidence(session: Session, alert_id: int) -> tuple[Evidence, dict[str, HoldingIdentity]]:
    """The alert with its items, and how people name the items' holdings."""
    with answered(NotFoundException, AlertNotFoundError):
        found = evidence_of(session, alert_id)
    refs = [i.holding_ref for items in found.items.values() for i in items if i.holding_ref]
    return found, holding_identities(session, refs)


def _on_alert(alert_id: int, action: Callable[..., object], done: str) -> Change:
    """Acknowledge or resolve the alert, with the comment the person typed as its reason."""

    def change(acting: OperatorService, form: FormMultiDict) -> Outcome:
        acting.perform(action, alert_id, form_fields.text(form, "comment"))
        return Outcome(f"/console/alerts/{alert_id}", done)

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
        change = _on_alert(alert_id, operator_actions.acknowledge, "acknowledged")
        return await act(request, change, f"/console/alerts/{alert_id}")

    @post("/{alert_id:int}/resolve")
    async def resolve(self, request: AnyRequest, alert_id: RowId) -> Response[Any]:
        change = _on_alert(alert_id, operator_actions.resolve, "resolved")
        return await act(request, change, f"/console/alerts/{alert_id}")
