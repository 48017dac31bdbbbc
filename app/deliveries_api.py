"""`/deliveries`: the inbox for operators (admin token), idiomatic Litestar.

List with filters and cursor paging, show one delivery with its exact bytes, replay one (reset
it to pending and enqueue it, the same as `recon deliveries replay ROW_ID`), replay every
quarantined delivery at once once recon has learned their shape (the same as
`recon deliveries replay --quarantined`), and mark which body of a delivery id re-sent with
another body is the true one (the same as `recon deliveries choose ROW_ID`). The three changes
go through the operator service (`app.operator_door`), as the CLI's do, each audited as from
`api`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Final

import msgspec
from litestar import Controller, get, post
from litestar.datastructures import State
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromPath, JSONBody, QueryParameter

from app import state_keys
from app.auth import admin_guard
from app.operator_door import perform
from reconciliation.notifications import (
    MAX_PAGE_SIZE,
    MAX_REPLAY,
    BulkReplayOut,
    DeliveryDetail,
    DeliveryPageOut,
    DeliverySummary,
    checked_row_id,
    detail,
    get_delivery,
    list_deliveries,
    replay_summary,
    summarise,
)
from reconciliation.operator import actions
from reconciliation.store import transaction


class BodyChoice(msgspec.Struct):
    """Who marks a body as the true one, and why (both kept in the audit trail)."""

    by: str
    reason: str


class Replayer(msgspec.Struct):
    """Who replays, for the audit trail; a replay sent with no body is recorded under
    `app.operator_door.ADMIN_TOKEN_ACTOR`."""

    by: str


#: Page size when the caller does not ask for one.
DEFAULT_PAGE_SIZE: Final = 50


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
            QueryParameter(name="state", description="pending, processed, quarantined or rejected"),
        ] = None,
        event_type: Annotated[str | None, QueryParameter(name="eventType")] = None,
        cursor: Annotated[
            str | None, QueryParameter(description="nextCursor of the previous page")
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE_SIZE)] = DEFAULT_PAGE_SIZE,
    ) -> DeliveryPageOut:
        """Inbox rows, newest first, filtered by state and event type."""
        try:
            with transaction(state[state_keys.SESSION_FACTORY]) as session:
                page = list_deliveries(
                    session, state=inbox_state, event_type=event_type, cursor=cursor, limit=limit
                )
                items = [summarise(row) for row in page.items]
        except ValueError as exc:
            raise ValidationException(detail=str(exc)) from None
        return DeliveryPageOut(items=items, next_cursor=page.next_cursor)

    @get("/{row_id:int}", sync_to_thread=True)
    def show_delivery(self, state: State, row_id: FromPath[int]) -> DeliveryDetail:
        """One delivery with the headers kept and its exact bytes."""
        _require_row_id(row_id)
        with transaction(state[state_keys.SESSION_FACTORY]) as session:
            row = get_delivery(session, row_id)
            if row is None:
                raise NotFoundException(detail=f"no delivery with row id {row_id}")
            return detail(row)

    @post("/{row_id:int}/replay", sync_to_thread=True, status_code=200)
    def replay_delivery(
        self, state: State, row_id: FromPath[int], data: JSONBody[Replayer | None] = None
    ) -> DeliverySummary:
        """Reset one delivery to pending and enqueue it for processing again."""
        row = perform(state, data.by if data else None, actions.replay, row_id)
        _enqueue(state, [row_id])
        return summarise(row)

    @post("/{row_id:int}/choose", sync_to_thread=True, status_code=200)
    def choose_true_body(
        self, state: State, row_id: FromPath[int], data: JSONBody[BodyChoice]
    ) -> dict[str, Any]:
        """Mark this row as the true body of its delivery id (the same as `recon deliveries
        choose`): it becomes the id's notification, every other body is kept as evidence
        (`rejected`), and the `delivery_body_conflict` alert is resolved. Recorded in the
        audit trail under `by`."""
        reader = state[state_keys.PAYLOAD_READER]
        chosen = perform(state, data.by, actions.choose_body, row_id, data.reason, reader)
        return {
            "deliveryId": chosen.delivery_id,
            "chosenRow": chosen.chosen_row,
            "rejectedRows": chosen.rejected_rows,
            "notificationId": chosen.notification_id,
            "notificationChanged": chosen.notification_changed,
            "unmatched": chosen.unmatched,
            "resolvedAlert": chosen.resolved_alert,
            "summary": chosen.describe(),
        }

    @post("/replay", sync_to_thread=True, status_code=200)
    def replay_deliveries(
        self,
        state: State,
        inbox_state: Annotated[
            str,
            QueryParameter(
                name="state",
                description="quarantined (read them again) or pending (re-send them)",
            ),
        ],
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_REPLAY)] = MAX_REPLAY,
        data: JSONBody[Replayer | None] = None,
    ) -> BulkReplayOut:
        """Reset every delivery in a state to pending (oldest first, up to `limit`) and enqueue
        them; `remaining` says how many are left for another call."""
        done = perform(state, data.by if data else None, actions.replay_many, inbox_state, limit)
        _enqueue(state, done.row_ids)
        return replay_summary(done)


def _enqueue(state: State, row_ids: Sequence[int]) -> None:
    """Hand rows the change put back to pending to the workers, after its commit."""
    enqueue: Callable[[Sequence[int]], None] = state[state_keys.ENQUEUE]
    enqueue(row_ids)


def _require_row_id(row_id: int) -> None:
    """400 for a number no row can have (it would overflow the database driver: a 500)."""
    try:
        checked_row_id(row_id)
    except ValueError as exc:
        raise ValidationException(detail=str(exc)) from None
