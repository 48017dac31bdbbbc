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

Reading the bodies is most of the work, so it is done a chunk at a time by
`reconciliation.rebuild.reading` (in worker processes over a large inbox) while this module
decides, in delivery order, what each read means. On PostgreSQL the notifications go into the
scratch through `COPY ... FROM STDIN`, a chunk per statement; on SQLite through one INSERT per
chunk. Deliveries whose derived state changes (none, when the live store is right) are updated
a chunk per statement on both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Protocol

from sqlalchemy import Connection, Text, bindparam, cast, func, select, update

from reconciliation.notifications.inbox import PROCESSED, QUARANTINED, stored_delivery_id
from reconciliation.notifications.processing_writes import UNSTORABLE
from reconciliation.notifications.shape_alerts import ShapeProblem, shape_problem_fingerprint
from reconciliation.rebuild.facets import tables_in
from reconciliation.rebuild.reading import (
    BODY_COLUMNS,
    ChunkReader,
    Read,
    Transcribe,
    Unstorable,
    copy_fields,
    copy_text,
    notification_of,
)
from reconciliation.store.models import UNMATCHED
from upstream import DeliveryNotification, DeliveryNotUnderstood, PayloadReader

#: Deliveries read per round trip (and notifications written per statement).
BATCH: Final = 5_000

#: Why a second readable body under one id is not applied (the delivery keeps its bytes).
SECOND_STORY: Final = (
    "delivery id {delivery_id!r} already produced a notification from another body; kept for "
    "review. The body is kept unchanged; fix the cause and replay the delivery."
)
#: Why a body no shape reads is quarantined (`{why}`: the reader's own description).
NOT_UNDERSTOOD: Final = "{why}. The body is kept unchanged; fix the cause and replay the delivery."
#: A timestamp as PostgreSQL's `to_char` writes it in ISO 8601, UTC, to the microsecond: read
#: back by COPY as the same instant whatever the session's DateStyle and time zone.
ISO_UTC: Final = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
#: Columns a COPY into the scratch notifications names, in the order its lines carry them.
COPY_COLUMNS: Final = ("id", "delivery_pk", "event_id", *BODY_COLUMNS, "created_at", "match_status")


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


class _Writer(Protocol):
    """Where one chunk's outcomes go: notifications, and deliveries whose state changed."""

    #: How a body is read for this writer (what `note`'s `written` is).
    transcribe: Transcribe
    restated: list[dict[str, Any]]

    def note(self, note_id: int, row: Any, written: Any) -> None: ...

    def flush(self) -> None: ...


class _Restater:
    """Deliveries whose derived state changed, updated a chunk per statement."""

    def __init__(self, connection: Connection, schema: str) -> None:
        deliveries = tables_in(schema)["deliveries"]
        self._connection = connection
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
        self.restated: list[dict[str, Any]] = []

    def flush_restated(self) -> None:
        if self.restated:
            self._connection.execute(self._restate, self.restated)
            self.restated = []


class _InsertWriter(_Restater):
    """Notifications as SQLAlchemy INSERTs (SQLite), a chunk per statement."""

    transcribe: Transcribe = staticmethod(notification_of)

    def __init__(self, connection: Connection, schema: str) -> None:
        super().__init__(connection, schema)
        self._insert = tables_in(schema)["notifications"].insert()
        self.notes: list[dict[str, Any]] = []

    def note(self, note_id: int, row: Any, written: Any) -> None:
        note = _notification(row.id, row.delivery_id, written, row.created)
        self.notes.append({"id": note_id, **note})

    def flush(self) -> None:
        if self.notes:
            self._connection.execute(self._insert, self.notes)
            self.notes = []
        self.flush_restated()


class _CopyWriter(_Restater):
    """Notifications through PostgreSQL's COPY, a chunk per statement: the body's columns come
    already in COPY's text format (`reading.copy_fields`), the rest is added here."""

    transcribe: Transcribe = staticmethod(copy_fields)

    def __init__(self, connection: Connection, schema: str) -> None:
        super().__init__(connection, schema)
        self._raw: Any = connection.connection.driver_connection
        self._statement = f"COPY {schema}.notifications ({', '.join(COPY_COLUMNS)}) FROM STDIN"
        self.lines: list[str] = []

    def note(self, note_id: int, row: Any, written: Any) -> None:
        # `row.created` is already text (`_inbox`), in a form COPY reads back exactly.
        self.lines.append(
            f"{note_id}\t{row.id}\t{copy_text(row.delivery_id)}\t{written}\t{row.created}\t"
            f"{UNMATCHED}\n"
        )

    def flush(self) -> None:
        if self.lines:
            with self._raw.cursor() as cursor, cursor.copy(self._statement) as copy:
                copy.write("".join(self.lines).encode())
            self.lines = []
        self.flush_restated()


def _second_bodies(connection: Connection, live: dict[str, Any], up_to: int | None) -> set[str]:
    """Delivery ids with more than one processed body: the only ones that need remembering."""
    d = live["deliveries"]
    query = (
        select(d.c.delivery_id)
        .where(d.c.attempts > 0, d.c.original.is_not(False), *_up_to(d, up_to))
        .group_by(d.c.delivery_id)
        .having(func.count() > 1)
    )
    return set(connection.scalars(query))


def _up_to(deliveries: Any, up_to: int | None) -> list[Any]:
    return [] if up_to is None else [deliveries.c.id <= up_to]


def _inbox(live: dict[str, Any], dialect: str, up_to: int | None) -> Any:
    """Every processed delivery (an original body) with its live notification's id, in order.

    On PostgreSQL the headers come as their JSON text (a worker parses them, with
    `json.loads` as the driver would) and the notification's creation time as ISO 8601 text in
    UTC, to the microsecond (what COPY reads back exactly): this process then only passes
    them on. On SQLite both come as values, for the INSERT.
    """
    d, n = live["deliveries"], live["notifications"]
    headers: Any = d.c.headers
    created: Any = func.coalesce(d.c.processed_at, d.c.received_at)
    if dialect == "postgresql":
        headers = cast(headers, Text)
        created = func.to_char(func.timezone("UTC", created), ISO_UTC)
    return (
        select(
            d.c.id,
            d.c.delivery_id,
            d.c.body,
            headers.label("headers"),
            d.c.state,
            d.c.event_type,
            d.c.shape_problem,
            created.label("created"),
            n.c.id.label("live_id"),
        )
        .select_from(d.outerjoin(n, n.c.delivery_pk == d.c.id))
        .where(d.c.attempts > 0, d.c.original.is_not(False), *_up_to(d, up_to))
        .order_by(d.c.id)
    )


def rebuild_notifications(
    connection: Connection,
    schema: str,
    reader: PayloadReader,
    workers: int = 0,
    up_to: int | None = None,
) -> NotificationTally:
    """Read every processed delivery (with an id up to `up_to`, when given) again into the
    scratch `schema` (caller's transaction), with `workers` processes reading the bodies (0:
    this process reads them)."""
    live = tables_in(None)
    n = live["notifications"]
    tally = NotificationTally()
    outcome = _Outcome(tally, _second_bodies(connection, live, up_to))
    outcome.next_id = int(connection.scalar(select(func.coalesce(func.max(n.c.id), 0))) or 0) + 1
    writer: _Writer = (
        _CopyWriter(connection, schema)
        if connection.dialect.name == "postgresql"
        else _InsertWriter(connection, schema)
    )
    query = _inbox(live, connection.dialect.name, up_to)
    result = connection.execute(query.execution_options(stream_results=True, yield_per=BATCH))
    waiting: deque[tuple[Sequence[Any], Callable[[], list[Read]]]] = deque()
    with ChunkReader(reader, writer.transcribe, workers) as bodies:
        for rows in result.partitions():
            waiting.append((rows, bodies.submit([(r.body, r.headers) for r in rows])))
            while len(waiting) > bodies.ahead:
                outcome.apply(writer, *waiting.popleft())
        while waiting:
            outcome.apply(writer, *waiting.popleft())
    return tally


@dataclass(slots=True)
class _Outcome:
    """What each read delivery becomes, decided in delivery order."""

    tally: NotificationTally
    #: Delivery ids with more than one processed body (`_second_bodies`).
    repeated: set[str]
    #: Those of them that already produced a notification.
    told: set[str] = field(default_factory=set)
    #: The next notification id for a delivery the live store has no notification of.
    next_id: int = 1

    def apply(self, writer: _Writer, rows: Sequence[Any], reads: Callable[[], list[Read]]) -> None:
        """One chunk: every row with its read, then the chunk written."""
        for row, read in zip(rows, reads(), strict=True):
            self.one(writer, row, read)
        writer.flush()

    def one(self, writer: _Writer, row: Any, read: Read) -> None:
        """Derive one delivery's outcome."""
        tally = self.tally
        tally.read += 1
        event_type, shape_problem, error = row.event_type, None, None
        if isinstance(read, DeliveryNotUnderstood):
            shape_problem = shape_problem_fingerprint(read)
            tally.problems.setdefault(shape_problem, ShapeProblem(read)).row_ids.append(row.id)
            state, error = QUARANTINED, NOT_UNDERSTOOD.format(why=read.describe())
        elif isinstance(read, Unstorable):
            state, error = QUARANTINED, UNSTORABLE.format(field=read.field)
        elif row.delivery_id in self.told:
            state, error = QUARANTINED, SECOND_STORY.format(delivery_id=row.delivery_id)
        else:
            state, event_type = PROCESSED, read[0]
            if row.delivery_id in self.repeated:
                self.told.add(row.delivery_id)
            if row.live_id is not None:
                note_id = row.live_id
            else:
                note_id, self.next_id = self.next_id, self.next_id + 1
                tally.new_ids += 1
            writer.note(note_id, row, read[1])
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
