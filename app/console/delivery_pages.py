"""Deliveries: the inbox searched by id, event type and state; one delivery's bytes and
headers; replay one, or every quarantined one (bounded per press); and, for a delivery id that
arrived with two bodies, choose the true one (the same service as `recon deliveries choose`),
which replaying cannot settle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromQuery, QueryParameter
from litestar.response import Template
from sqlalchemy import select
from sqlalchemy.orm import Session

import app.console.forms as form_fields
from app import state_keys
from app.console.rendering import Change, Outcome, act, answered, page, read
from app.console.session import console_guard
from app.path_ids import RowId
from reconciliation.notifications import (
    QUARANTINED,
    STATES,
    DeliveryDetail,
    DeliverySummary,
    detail,
    find_by_delivery_id,
    list_deliveries,
    summarise,
)
from reconciliation.operator import OperatorService
from reconciliation.operator import actions as operator_actions
from reconciliation.store import Delivery, Notification
from upstream import PayloadReader

AnyRequest = Request[Any, Any, Any]


@dataclass(frozen=True, slots=True)
class InboxPage:
    items: list[DeliverySummary]
    next_cursor: str | None


def _search(
    session: Session,
    state: str | None,
    event_type: str | None,
    delivery_id: str | None,
    cursor: str | None,
) -> InboxPage:
    if delivery_id:
        return InboxPage(
            [summarise(r) for r in find_by_delivery_id(session, delivery_id)[:50]],
            None,
        )
    with answered(ValidationException, ValueError):
        found = list_deliveries(
            session, state=state, event_type=event_type, cursor=cursor, limit=50
        )
    return InboxPage([summarise(r) for r in found.items], found.next_cursor)


@dataclass(frozen=True, slots=True)
class DeliveryView:
    detail: DeliveryDetail
    notification_id: int | None
    siblings: list[DeliverySummary]


def _show(session: Session, row_id: int) -> DeliveryView:
    row = session.get(Delivery, row_id)
    if row is None:
        raise NotFoundException(detail=f"no delivery with row id {row_id}")
    note = session.scalar(select(Notification.id).where(Notification.delivery_pk == row_id))
    siblings = [
        summarise(r) for r in find_by_delivery_id(session, row.delivery_id)[:20] if r.id != row_id
    ]
    return DeliveryView(detail(row), note, siblings)


def _replay(row_id: int) -> Change:
    def change(acting: OperatorService, _: FormMultiDict) -> Outcome:
        acting.perform(operator_actions.replay, row_id)
        return Outcome(f"/console/deliveries/{row_id}", "replayed", (row_id,))

    return change


def _choose(row_id: int, reader: PayloadReader) -> Change:
    """This row is the true body of its delivery id, for the reason the person typed."""

    def change(acting: OperatorService, form: FormMultiDict) -> Outcome:
        acting.perform(
            operator_actions.choose_body, row_id, form_fields.text(form, "reason"), reader
        )
        return Outcome(f"/console/deliveries/{row_id}", "chose-body")

    return change


def _replay_all(acting: OperatorService, _: FormMultiDict) -> Outcome:
    done = acting.perform(
        operator_actions.replay_many, QUARANTINED, operator_actions.REPLAY_ALL_MAX
    )
    told = "replayed-some" if done.remaining else "replayed-all"
    return Outcome(
        "/console/deliveries", told if done.row_ids else "none-quarantined", tuple(done.row_ids)
    )


class DeliveryPages(Controller):
    path = "/deliveries"
    guards = [console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @get("/", sync_to_thread=True)
    def deliveries(
        self,
        request: AnyRequest,
        inbox_state: Annotated[str | None, QueryParameter(name="state")] = None,
        event_type: FromQuery[str | None] = None,
        delivery_id: FromQuery[str | None] = None,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """The inbox, newest first."""
        found = read(
            request, _search, inbox_state or None, event_type or None, delivery_id or None, cursor
        )
        return page(
            request,
            "deliveries.html",
            found=found,
            state=inbox_state,
            event_type=event_type,
            delivery_id=delivery_id,
            states=STATES,
        )

    @get("/{row_id:int}", sync_to_thread=True)
    def delivery(self, request: AnyRequest, row_id: RowId) -> Template:
        """The exact bytes (escaped), the headers kept, the outcome."""
        return page(request, "delivery.html", view=read(request, _show, row_id))

    @post("/{row_id:int}/replay")
    async def replay(self, request: AnyRequest, row_id: RowId) -> Response[Any]:
        return await act(request, _replay(row_id), f"/console/deliveries/{row_id}")

    @post("/{row_id:int}/choose")
    async def choose(self, request: AnyRequest, row_id: RowId) -> Response[Any]:
        reader: PayloadReader = request.app.state[state_keys.PAYLOAD_READER]
        return await act(request, _choose(row_id, reader), f"/console/deliveries/{row_id}")

    @post("/replay-quarantined")
    async def replay_all(self, request: AnyRequest) -> Response[Any]:
        return await act(request, _replay_all, "/console/deliveries?state=quarantined")
