"""Notifications again from the inbox's bytes, through the same payload reader processing uses.

Every delivery processing has seen (`attempts > 0`; an original body, not another body re-sent
under a known id) is read again with the configured `PayloadReader`
(`reconciliation.notifications.processing` reads with the same one; this module does not parse
anything itself), in delivery order, streamed from the database a batch at a time:

- no shape reads it: quarantined, marked with its shape problem's fingerprint (the
  `delivery_not_understood` alert is raised afterwards, as processing raises it);
- its id already produced a notification from an earlier body: quarantined (two stories under
  one id are for a person);
- otherwise processed, and its notification written.

`processing.process_deliveries` works one claimed batch at a time with a statement per delivery,
which is right for a live inbox and minutes too slow for a million; this is the set-wise path
with the same outcomes. A notification keeps the id the live one has (console links, people's
matches and alert evidence name notifications by id); one the live store lacks gets a new id
above every live one. Its `created_at` is when processing ran (the delivery's `processed_at`).
Deliveries never processed (pending, or refused at intake) keep their state: nothing derived
them yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection, bindparam, func, select, update

from reconciliation.notifications.inbox import PROCESSED, QUARANTINED, stored_delivery_id
from reconciliation.notifications.shape_alerts import ShapeProblem, shape_problem_fingerprint
from reconciliation.rebuild.facets import tables_in
from reconciliation.store.models import UNMATCHED
from upstream.webhooks.payloads import DeliveryNotification, DeliveryNotUnderstood, PayloadReader

#: Deliveries read per round trip (and notifications written per statement).
BATCH: Final = 5_000

#: Why a second readable body under one id is not applied (the delivery keeps its bytes).
SECOND_STORY: Final = (
    "delivery id {delivery_id!r} already produced a notification from another body; kept for "
    "review. The body is kept unchanged; fix the cause and replay the delivery."
)
#: Why a body no shape reads is quarantined (`{why}`: the reader's own description).
NOT_UNDERSTOOD: Final = "{why}. The body is kept unchanged; fix the cause and replay the delivery."


@dataclass(slots=True)
class NotificationTally:
    """What reading the inbox again produced."""

    read: int = 0
    notifications: int = 0
    quarantined: int = 0
    #: Deliveries whose derived state (state, event type, shape problem) differs from the live.
    restated: int = 0
    new_ids: int = 0
    problems: dict[str, ShapeProblem] = field(default_factory=dict)


def _notification(
    pk: int, delivery_id: str, note: DeliveryNotification, created: datetime
) -> dict[str, Any]:
    return {
        "delivery_pk": pk,
        "event_id": delivery_id,
        "body_id": stored_delivery_id(note.body_id) if note.body_id is not None else None,
        "payload_shape": note.shape,
        "event_type": note.event_type,
        "transfer_ref": note.transfer_ref,
        "receipt_ref": note.receipt_ref,
        "account_ref": note.account_ref,
        "endpoint_ref": note.endpoint_ref,
        "holding_ref": note.holding_ref,
        "account_number": note.account_number,
        "amount_minor": note.amount_minor,
        "currency": note.currency,
        "claimed_status": note.claimed_status,
        "narration": note.narration,
        "occurred_at": note.occurred_at,
        "created_at": created,
        "match_status": UNMATCHED,
    }


class _Writer:
    """Buffers the scratch writes and sends them a batch per statement."""

    def __init__(self, connection: Connection, schema: str) -> None:
        scratch = tables_in(schema)
        self._connection = connection
        self._insert = scratch["notifications"].insert()
        deliveries = scratch["deliveries"]
        self._restate = (
            update(deliveries)
            .where(deliveries.c.id == bindparam("pk"))
            .values(
                state=bindparam("new_state"),
                event_type=bindparam("new_event_type"),
                shape_problem=bindparam("new_shape_problem"),
                error=bindparam("new_error"),
            )
        )
        self.notes: list[dict[str, Any]] = []
        self.restated: list[dict[str, Any]] = []

    def flush(self) -> None:
        if self.notes:
            self._connection.execute(self._insert, self.notes)
            self.notes = []
        if self.restated:
            self._connection.execute(self._restate, self.restated)
            self.restated = []


def _second_bodies(connection: Connection, live: dict[str, Any]) -> set[str]:
    """Delivery ids with more than one processed body: the only ones that need remembering."""
    d = live["deliveries"]
    query = (
        select(d.c.delivery_id)
        .where(d.c.attempts > 0, d.c.original.is_not(False))
        .group_by(d.c.delivery_id)
        .having(func.count() > 1)
    )
    return set(connection.scalars(query))


def rebuild_notifications(
    connection: Connection, schema: str, reader: PayloadReader
) -> NotificationTally:
    """Read every processed delivery again into the scratch `schema` (caller's transaction)."""
    live = tables_in(None)
    d, n = live["deliveries"], live["notifications"]
    tally = NotificationTally()
    repeated = _second_bodies(connection, live)
    told: set[str] = set()
    next_id = int(connection.scalar(select(func.coalesce(func.max(n.c.id), 0))) or 0) + 1
    writer = _Writer(connection, schema)
    query = (
        select(
            d.c.id,
            d.c.delivery_id,
            d.c.body,
            d.c.headers,
            d.c.state,
            d.c.event_type,
            d.c.shape_problem,
            d.c.processed_at,
            d.c.received_at,
            n.c.id.label("live_id"),
        )
        .select_from(d.outerjoin(n, n.c.delivery_pk == d.c.id))
        .where(d.c.attempts > 0, d.c.original.is_not(False))
        .order_by(d.c.id)
    )
    result = connection.execute(query.execution_options(stream_results=True, yield_per=BATCH))
    for rows in result.partitions():
        for row in rows:
            next_id = _read_one(row, reader, tally, writer, repeated, told, next_id)
        writer.flush()
    return tally


def _read_one(
    row: Any,
    reader: PayloadReader,
    tally: NotificationTally,
    writer: _Writer,
    repeated: set[str],
    told: set[str],
    next_id: int,
) -> int:
    """Derive one delivery's outcome; returns the next free notification id."""
    tally.read += 1
    outcome = reader.read(row.body, row.headers or {})
    event_type, shape_problem, error = row.event_type, None, None
    if isinstance(outcome, DeliveryNotUnderstood):
        shape_problem = shape_problem_fingerprint(outcome)
        tally.problems.setdefault(shape_problem, ShapeProblem(outcome)).row_ids.append(row.id)
        state, error = QUARANTINED, NOT_UNDERSTOOD.format(why=outcome.describe())
    elif row.delivery_id in told:
        state, error = QUARANTINED, SECOND_STORY.format(delivery_id=row.delivery_id)
    else:
        state, event_type = PROCESSED, outcome.event_type
        if row.delivery_id in repeated:
            told.add(row.delivery_id)
        note = _notification(row.id, row.delivery_id, outcome, row.processed_at or row.received_at)
        if row.live_id is not None:
            note["id"] = row.live_id
        else:
            note["id"], next_id = next_id, next_id + 1
            tally.new_ids += 1
        writer.notes.append(note)
        tally.notifications += 1
    if state == QUARANTINED:
        tally.quarantined += 1
    if (state, event_type, shape_problem) != (row.state, row.event_type, row.shape_problem):
        tally.restated += 1
        writer.restated.append(
            {
                "pk": row.id,
                "new_state": state,
                "new_event_type": event_type,
                "new_shape_problem": shape_problem,
                "new_error": error,
            }
        )
    return next_id
