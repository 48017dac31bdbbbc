"""`/deliveries`: the inbox for operators (admin token), idiomatic Litestar.

List with filters and cursor paging, show one delivery with its exact bytes, and replay one:
reset it to pending and enqueue it, the same as `recon deliveries replay`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Final

import msgspec
from litestar import Controller, get, post
from litestar.datastructures import State
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromPath, QueryParameter

from app import state_keys
from app.auth import admin_guard
from reconciliation import inbox
from reconciliation.store.db import transaction
from reconciliation.store.models import Delivery

#: Page size when the caller does not ask for one.
DEFAULT_PAGE_SIZE: Final = 50


class DeliverySummary(msgspec.Struct, rename="camel"):
    """One inbox row without its body."""

    id: int
    delivery_id: str
    event_type: str | None
    state: str
    scheme: str
    received_at: datetime
    attempts: int
    error: str | None
    processed_at: datetime | None
    body_bytes: int


class DeliveryPageOut(msgspec.Struct, rename="camel"):
    """A page of the inbox, newest first; pass `nextCursor` back as `cursor` for the next."""

    items: list[DeliverySummary]
    next_cursor: str | None


class DeliveryDetail(msgspec.Struct, rename="camel"):
    """One inbox row with the headers kept and the exact body received.

    `body` is the body as text when it is UTF-8, `bodyBase64` always holds the exact bytes.
    """

    delivery: DeliverySummary
    headers: dict[str, str]
    body_sha256: str
    body: str | None
    body_base64: str


def summarise(row: Delivery) -> DeliverySummary:
    """The API view of a row (shared with the CLI's JSON output)."""
    return DeliverySummary(
        id=row.id,
        delivery_id=row.delivery_id,
        event_type=row.event_type,
        state=row.state,
        scheme=row.scheme,
        received_at=row.received_at,
        attempts=row.attempts,
        error=row.error,
        processed_at=row.processed_at,
        body_bytes=len(row.body),
    )


def detail(row: Delivery) -> DeliveryDetail:
    """The API view of a row with its bytes."""
    try:
        text: str | None = row.body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return DeliveryDetail(
        delivery=summarise(row),
        headers={str(k): str(v) for k, v in row.headers.items()},
        body_sha256=row.body_sha256,
        body=text,
        body_base64=base64.b64encode(row.body).decode(),
    )


class DeliveriesController(Controller):
    """The webhook inbox."""

    path = "/deliveries"
    guards = [admin_guard]  # noqa: RUF012 - Litestar's declared class attribute
    tags = ["inbox"]  # noqa: RUF012

    @get("/", sync_to_thread=True)
    def list_deliveries(
        self,
        state: State,
        inbox_state: Annotated[
            str | None,
            QueryParameter(name="state", description="pending, processed or quarantined"),
        ] = None,
        event_type: Annotated[str | None, QueryParameter(name="eventType")] = None,
        cursor: Annotated[
            str | None, QueryParameter(description="nextCursor of the previous page")
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=inbox.MAX_PAGE_SIZE)] = DEFAULT_PAGE_SIZE,
    ) -> DeliveryPageOut:
        """Inbox rows, newest first, filtered by state and event type."""
        try:
            with transaction(state[state_keys.SESSION_FACTORY]) as session:
                page = inbox.list_deliveries(
                    session, state=inbox_state, event_type=event_type, cursor=cursor, limit=limit
                )
                items = [summarise(row) for row in page.items]
        except ValueError as exc:
            raise ValidationException(detail=str(exc)) from None
        return DeliveryPageOut(items=items, next_cursor=page.next_cursor)

    @get("/{row_id:int}", sync_to_thread=True)
    def show_delivery(self, state: State, row_id: FromPath[int]) -> DeliveryDetail:
        """One delivery with the headers kept and its exact bytes."""
        with transaction(state[state_keys.SESSION_FACTORY]) as session:
            row = inbox.get_delivery(session, row_id)
            if row is None:
                raise NotFoundException(detail=f"no delivery with row id {row_id}")
            return detail(row)

    @post("/{row_id:int}/replay", sync_to_thread=True, status_code=200)
    def replay_delivery(self, state: State, row_id: FromPath[int]) -> DeliverySummary:
        """Reset one delivery to pending and enqueue it for processing again."""
        enqueue: Callable[[Sequence[int]], None] = state[state_keys.ENQUEUE]
        with transaction(state[state_keys.SESSION_FACTORY]) as session:
            try:
                row = inbox.reset_for_replay(session, row_id)
            except LookupError as exc:
                raise NotFoundException(detail=str(exc)) from None
            summary = summarise(row)
        enqueue([row_id])
        return summary
