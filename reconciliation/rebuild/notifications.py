"""Notifications again from the inbox's bytes, decided as the live inbox decides them.

Every delivery processing has seen (`attempts > 0`; an original body, not another body re-sent
under a known id) is read again with the configured `PayloadReader`, in delivery order, a chunk
at a time, and each chunk is decided by the live inbox's own decision
(`reconciliation.notifications.deciding`; this module decides nothing itself), so the rebuild
and the live path cannot disagree about what a delivery becomes. The `delivery_not_understood`
alert is raised afterwards from the gaps the decision gathered, as processing raises it.

A notification keeps the id the live one has (console links, people's matches and alert
evidence name notifications by id); one the live store lacks gets a new id above every live
one. Its `created_at` is when processing ran (the delivery's `processed_at`). Deliveries never
processed (pending, or refused at intake) keep their state: nothing derived them yet.

Reading the bodies is most of the work, so it is done a chunk at a time by
`reconciliation.rebuild.reading` (in worker processes over a large inbox) while this module
decides and writes the chunks already read, in delivery order. On PostgreSQL the notifications
go into the scratch through `COPY ... FROM STDIN`, a chunk per statement; on SQLite through one
INSERT per chunk. Deliveries whose derived state changes (none, when the live store is right)
are updated a chunk per statement on both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Connection, Text, bindparam, cast, func, select, update

from reconciliation.notifications.deciding import Decision, Read, SetAside, Transcribe, whole
from reconciliation.notifications.inbox import PROCESSED, QUARANTINED
from reconciliation.notifications.processing_writes import notification_values
from reconciliation.notifications.shape_alerts import ShapeProblem
from reconciliation.rebuild.facets import tables_in
from reconciliation.rebuild.reading import BODY_COLUMNS, ChunkReader, copy_fields, copy_text
from reconciliation.store.models import UNMATCHED
from upstream import PayloadReader

#: Deliveries read per round trip (and notifications written per statement).
BATCH: Final = 5_000

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


class _Scratch:
    """Each chunk decided (`deciding.Decision`, in delivery order), then written into the
    scratch, a statement for its notifications and one for its deliveries whose derived state
    changed: notifications through PostgreSQL's COPY (the body's columns come already in COPY's
    text format, `reading.copy_fields`; the rest is added here), or SQLAlchemy INSERTs."""

    def __init__(self, connection: Connection, schema: str, decision: Decision) -> None:
        tables = tables_in(schema)
        deliveries = tables["deliveries"]
        self.decision, self.tally = decision, NotificationTally(problems=decision.problems)
        #: The next notification id for a delivery the live store has no notification of.
        self.next_id = 1
        self._connection = connection
        self._copy = connection.dialect.name == "postgresql"
        self.transcribe: Transcribe = copy_fields if self._copy else whole
        self._insert = tables["notifications"].insert()
        self._copy_in = f"COPY {schema}.notifications ({', '.join(COPY_COLUMNS)}) FROM STDIN"
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

    def apply(self, rows: Sequence[Any], reads: Callable[[], list[Read]]) -> None:
        """One chunk: every row decided with its read, then the chunk written."""
        tally, notes, restated = self.tally, [], []
        tally.read += len(rows)
        for row, verdict in zip(rows, self.decision.decide(rows, reads()), strict=True):
            event_type, shape_problem, error = row.event_type, None, None
            if isinstance(verdict, SetAside):
                state, error, shape_problem = QUARANTINED, verdict.error, verdict.shape_problem
                tally.quarantined += 1
            else:
                state, event_type = PROCESSED, verdict.event_type
                note_id = row.live_id
                if note_id is None:
                    note_id, self.next_id = self.next_id, self.next_id + 1
                    tally.new_ids += 1
                notes.append(self._note(note_id, row, verdict.kept))
            if (state, event_type, shape_problem) != (row.state, row.event_type, row.shape_problem):
                restated.append(
                    {
                        "pk": row.id,
                        "new_state": state,
                        "new_event_type": event_type,
                        "new_shape_problem": shape_problem,
                        "new_error": error,
                    }
                )
        tally.notifications += len(notes)
        tally.restated += len(restated)
        if notes and self._copy:
            driver: Any = self._connection.connection.driver_connection
            with driver.cursor() as cursor, cursor.copy(self._copy_in) as copy:
                copy.write("".join(notes).encode())
        elif notes:
            self._connection.execute(self._insert, notes)
        if restated:
            self._connection.execute(self._restate, restated)

    def _note(self, note_id: int, row: Any, kept: Any) -> Any:
        if self._copy:
            # `row.created` is already text (`_inbox`), in a form COPY reads back exactly.
            return (
                f"{note_id}\t{row.id}\t{copy_text(row.delivery_id)}\t{kept}\t{row.created}\t"
                f"{UNMATCHED}\n"
            )
        values = notification_values(row.id, row.delivery_id, kept)
        return {"id": note_id, **values, "created_at": row.created, "match_status": UNMATCHED}


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
    decision = Decision(repeated=_second_bodies(connection, live, up_to))
    scratch = _Scratch(connection, schema, decision)
    scratch.next_id = int(connection.scalar(select(func.coalesce(func.max(n.c.id), 0))) or 0) + 1
    query = _inbox(live, connection.dialect.name, up_to)
    result = connection.execute(query.execution_options(stream_results=True, yield_per=BATCH))
    waiting: deque[tuple[Sequence[Any], Callable[[], list[Read]]]] = deque()
    with ChunkReader(reader, scratch.transcribe, workers) as bodies:
        for rows in result.partitions():
            waiting.append((rows, bodies.submit([(r.body, r.headers) for r in rows])))
            while len(waiting) > bodies.ahead:
                scratch.apply(*waiting.popleft())
        while waiting:
            scratch.apply(*waiting.popleft())
    return scratch.tally
