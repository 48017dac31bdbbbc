"""The inbox's write path per database: one batch, as few round trips as the database allows.

This is the receiver's hot path: every delivery acknowledged went through here inside its
batch's transaction, and round trips to the database and the web process's CPU are the limit.
Two unique indexes let the database itself sort every row, even between concurrent writers:

- (delivery_id, body_sha256): the same delivery again (a provider retry);
- (delivery_id) over rows with `original` true: another body under a known delivery id.

So the common case is ONE statement: insert every row as an original with ON CONFLICT DO
NOTHING, and whatever comes back is new. A row that does not come back collided with a stored
row (or with a rival writer's, which the database waited for); a second statement, only then,
reads what is stored under those ids: the same body is a duplicate, another body is inserted
as a non-original, quarantined row.

PostgreSQL takes the batch as arrays in one statement whose text never changes; SQLite (no round
trips, in-process) one prepared statement per row. Values pass through the columns' own
SQLAlchemy bind processors where the driver needs them, so rows read back through the ORM
exactly as if it had written them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import msgspec
from sqlalchemy.engine import Connection

from reconciliation.store.models import Delivery

#: The deliveries table.
TABLE: Final = Delivery.metadata.tables[Delivery.__tablename__]

_COLUMNS: Final = (
    "delivery_id, body_sha256, body, headers, scheme, event_type, received_at, state, attempts, "
    "error, original"
)
_PG_INSERT: Final = (
    f"INSERT INTO {TABLE.name} ({_COLUMNS}) "
    "SELECT u.d, u.s, u.b, u.h::json, u.sc, u.e, u.r, u.st, 0, u.er, u.o "
    "FROM unnest(%b::text[], %b::text[], %b::bytea[], %b::text[], %b::text[], %b::text[], "
    "%b::timestamptz[], %b::text[], %b::text[], %b::bool[]) AS u(d, s, b, h, sc, e, r, st, er, o) "
    "ON CONFLICT DO NOTHING RETURNING id, delivery_id, body_sha256"
)
_PG_STORED: Final = (
    f"SELECT delivery_id, body_sha256 FROM {TABLE.name} WHERE delivery_id = ANY(%b::text[])"
)
_SQLITE_INSERT: Final = (
    f"INSERT INTO {TABLE.name} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) "
    "ON CONFLICT DO NOTHING RETURNING id"
)


@dataclass(frozen=True, slots=True)
class NewRow:
    """One row to insert, with the state the caller chose for it.

    `original` is False only for a row the caller already knows is another body under an id
    earlier in the same batch.
    """

    delivery_id: str
    body_sha256: str
    body: bytes
    headers: dict[str, str]
    scheme: str
    event_type: str | None
    received_at: datetime
    state: str
    error: str | None
    original: bool = True


@dataclass(frozen=True, slots=True)
class StoredRow:
    """A row that was inserted: its id, and whether it was stored as a re-sent other body."""

    row_id: int
    conflict: bool


def insert_new(
    connection: Connection, rows: Sequence[NewRow], *, conflict: tuple[str, str]
) -> dict[tuple[str, str], StoredRow]:
    """Insert what is new among `rows` (unique (delivery_id, body_sha256) among themselves).

    `conflict` is the (state, error) given to another body under a known id. Returns the
    inserted rows by (delivery_id, body_sha256); a row missing from the answer was stored
    already (a duplicate).
    """
    if not rows:
        return {}
    postgres = connection.dialect.name == "postgresql"
    inserted = _insert_postgres(connection, rows) if postgres else _insert_sqlite(connection, rows)
    stored = {key: StoredRow(row_id, conflict=False) for key, row_id in inserted.items()}
    collided = [r for r in rows if (r.delivery_id, r.body_sha256) not in stored]
    if collided:
        stored.update(_settle_collisions(connection, collided, conflict, postgres))
    return stored


def _settle_collisions(
    connection: Connection, rows: list[NewRow], conflict: tuple[str, str], postgres: bool
) -> dict[tuple[str, str], StoredRow]:
    """Rows that did not go in: duplicates stay out, other bodies go in as non-originals."""
    ids = sorted({r.delivery_id for r in rows})
    if postgres:
        cursor = _driver(connection).cursor()
        cursor.execute(_PG_STORED, [ids], binary=True)
    else:
        cursor = _driver(connection).execute(
            f"SELECT delivery_id, body_sha256 FROM {TABLE.name} "
            f"WHERE delivery_id IN ({', '.join('?' * len(ids))})",
            ids,
        )
    known = {(d, s) for d, s in cursor.fetchall()}
    state, error = conflict
    others = [
        NewRow(
            delivery_id=r.delivery_id,
            body_sha256=r.body_sha256,
            body=r.body,
            headers=r.headers,
            scheme=r.scheme,
            event_type=r.event_type,
            received_at=r.received_at,
            state=state,
            error=error,
            original=False,
        )
        for r in rows
        if (r.delivery_id, r.body_sha256) not in known
    ]
    if not others:
        return {}
    inserted = (
        _insert_postgres(connection, others) if postgres else _insert_sqlite(connection, others)
    )
    return {key: StoredRow(row_id, conflict=True) for key, row_id in inserted.items()}


def _insert_postgres(connection: Connection, rows: Sequence[NewRow]) -> dict[tuple[str, str], int]:
    cursor = _driver(connection).cursor()
    # Binary array parameters (%b): no element needs quoting on the way out.
    cursor.execute(
        _PG_INSERT,
        [
            [r.delivery_id for r in rows],
            [r.body_sha256 for r in rows],
            [r.body for r in rows],
            [_json(r.headers) for r in rows],
            [r.scheme for r in rows],
            [r.event_type for r in rows],
            [r.received_at for r in rows],
            [r.state for r in rows],
            [r.error for r in rows],
            [r.original for r in rows],
        ],
        binary=True,
    )
    return {(d, s): int(i) for i, d, s in cursor.fetchall()}


def _insert_sqlite(connection: Connection, rows: Sequence[NewRow]) -> dict[tuple[str, str], int]:
    as_json = _processor(TABLE.c.headers, connection)
    as_time = _processor(TABLE.c.received_at, connection)
    cursor = _driver(connection).cursor()
    inserted: dict[tuple[str, str], int] = {}
    try:
        for r in rows:
            cursor.execute(
                _SQLITE_INSERT,
                (
                    r.delivery_id,
                    r.body_sha256,
                    r.body,
                    as_json(r.headers),
                    r.scheme,
                    r.event_type,
                    as_time(r.received_at),
                    r.state,
                    r.error,
                    r.original,
                ),
            )
            found = cursor.fetchone()
            if found is not None:
                inserted[(r.delivery_id, r.body_sha256)] = int(found[0])
    finally:
        cursor.close()
    return inserted


def _json(value: dict[str, str]) -> str:
    return msgspec.json.encode(value).decode()


def _processor(column: Any, connection: Connection) -> Callable[[Any], Any]:
    """The column type's own conversion to what the driver takes (identity when none)."""
    dialect = connection.dialect
    process = column.type.dialect_impl(dialect).bind_processor(dialect)
    return process if process is not None else _identity


def _identity(value: Any) -> Any:
    return value


def _driver(connection: Connection) -> Any:
    """The DBAPI connection under SQLAlchemy's, in the transaction SQLAlchemy opened."""
    return connection.connection.driver_connection
