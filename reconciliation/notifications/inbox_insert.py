"""The inbox's write path per database: one batch, as few round trips as the database allows.

This is the receiver's hot path: every delivery acknowledged went through here inside its
batch's transaction, and round trips to the database and the web process's CPU are the limit.
Two unique indexes let the database itself sort every row, even between concurrent writers:

- (delivery_id, body_sha256): the same delivery again (a provider retry);
- (delivery_id) over rows with `original` true: another body under a known delivery id.

So the common case is ONE statement: insert every row as an original with ON CONFLICT DO
NOTHING, and whatever comes back is new. A row that does not come back collided with a stored
row (or with a rival writer's, which the database waited for); only then, in a transaction of
its own, what is stored under those ids is read: the same body is a duplicate, another body is
inserted as a non-original, quarantined row (and its alert raised with it).

PostgreSQL takes the batch as one JSON text and one array of bodies, in a statement whose text
never changes; SQLite (no round trips, in-process) one prepared statement per row, its values
through the columns' own SQLAlchemy bind processors, so rows read back through the ORM exactly
as if it had written them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final, NamedTuple, Protocol

import msgspec
import psycopg
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
    "SELECT x.d, x.s, x.b, x.h, x.sc, x.e, x.r, x.st, 0, x.er, %b "
    "FROM ROWS FROM ("
    "json_to_recordset(%b::json) "
    "AS (d text, s text, h json, sc text, e text, r timestamptz, st text, er text), "
    "unnest(%b::bytea[])) AS x(d, s, h, sc, e, r, st, er, b) "
    "ON CONFLICT DO NOTHING RETURNING id, delivery_id, body_sha256"
)
_PG_STORED: Final = (
    f"SELECT delivery_id, body_sha256 FROM {TABLE.name} WHERE delivery_id = ANY(%b::text[])"
)
_SQLITE_INSERT: Final = (
    f"INSERT INTO {TABLE.name} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) "
    "ON CONFLICT DO NOTHING RETURNING id"
)


class NewRow(NamedTuple):
    """One delivery to insert, with the state the caller chose for it."""

    delivery: Incoming
    state: str
    error: str | None


class Incoming(Protocol):
    """What the inbox stores of a delivery (reconciliation.notifications.inbox.InboundDelivery)."""

    delivery_id: str
    body_sha256: str
    body: bytes
    headers: dict[str, str]
    scheme: str
    event_type: str | None
    received_at: datetime


def use_statement_commits(connection: Connection) -> None:
    """Let each inbox statement commit by itself on PostgreSQL (driver autocommit).

    A batch whose rows are all new is then one INSERT: one round trip, durable when it returns,
    with no BEGIN or COMMIT of its own to wait for. What must be atomic (another body under a
    known id, with its alert) still runs in a transaction (`atomic`). SQLite has no round trips
    to save: left as it is.
    """
    if connection.dialect.name == "postgresql" and not connection.in_transaction():
        _driver(connection).autocommit = True


@contextmanager
def atomic(connection: Connection) -> Iterator[None]:
    """A transaction for the block: the caller's if one is open, else one of its own."""
    if connection.in_transaction():
        yield
        return
    driver = _driver(connection)
    autocommit = bool(getattr(driver, "autocommit", False))
    if autocommit:
        driver.autocommit = False
    try:
        with connection.begin():
            yield
    finally:
        if autocommit:
            driver.autocommit = True


def insert_originals(
    connection: Connection, rows: Sequence[NewRow]
) -> tuple[dict[tuple[str, str], int], list[NewRow]]:
    """Insert rows as the first body of their id; one statement.

    Returns the row ids of those inserted, by (delivery_id, body_sha256), and the rows that
    collided with a stored row (a duplicate, or another body under a known id) for
    `insert_others` to sort out.
    """
    if not rows:
        return {}, []
    inserted = _insert(connection, rows, original=True)
    collided = [r for r in rows if (r.delivery.delivery_id, r.delivery.body_sha256) not in inserted]
    return inserted, collided


def insert_others(
    connection: Connection, rows: Sequence[NewRow], *, conflict: tuple[str, str]
) -> dict[tuple[str, str], int]:
    """Rows that cannot be originals: duplicates stay out, other bodies go in as non-originals.

    `conflict` is the (state, error) they are stored with. Returns the row ids of those
    inserted; a row missing from the answer is a duplicate. Run it inside `atomic` together with
    whatever must commit with those rows.
    """
    if not rows:
        return {}
    postgres = connection.dialect.name == "postgresql"
    ids = sorted({r.delivery.delivery_id for r in rows})
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
        NewRow(r.delivery, state, error)
        for r in rows
        if (r.delivery.delivery_id, r.delivery.body_sha256) not in known
    ]
    return _insert(connection, others, original=False) if others else {}


def _insert(
    connection: Connection, rows: Sequence[NewRow], *, original: bool
) -> dict[tuple[str, str], int]:
    if connection.dialect.name == "postgresql":
        return _insert_postgres(connection, rows, original)
    return _insert_sqlite(connection, rows, original)


class _JsonRow(msgspec.Struct):
    """One row as PostgreSQL's json_to_recordset reads it (the body travels apart)."""

    d: str
    s: str
    h: dict[str, str]
    sc: str
    e: str | None
    r: datetime
    st: str
    er: str | None


_encode_rows: Final = msgspec.json.Encoder().encode


def _insert_postgres(
    connection: Connection, rows: Sequence[NewRow], original: bool
) -> dict[tuple[str, str], int]:
    cursor = _driver(connection).cursor()
    cursor.execute(_PG_INSERT, _pg_parameters(rows, original), binary=True)
    return {(d, s): int(i) for i, d, s in cursor.fetchall()}


async def insert_originals_async(
    connection: psycopg.AsyncConnection[Any], rows: Sequence[NewRow]
) -> tuple[dict[tuple[str, str], int], list[NewRow]]:
    """`insert_originals` on an asyncio psycopg connection in autocommit (PostgreSQL only).

    The receiver's event loop runs it directly: the statement is its own transaction, durable
    when this returns.
    """
    if not rows:
        return {}, []
    cursor = connection.cursor()
    await cursor.execute(_PG_INSERT, _pg_parameters(rows, original=True), binary=True)
    inserted = {(d, s): int(i) for i, d, s in await cursor.fetchall()}
    collided = [r for r in rows if (r.delivery.delivery_id, r.delivery.body_sha256) not in inserted]
    return inserted, collided


def _pg_parameters(rows: Sequence[NewRow], original: bool) -> list[Any]:
    """The batch as one JSON text (encoded in C) plus the bodies as one bytea array.

    One array per column would cost the web process several times the CPU (the driver dumps
    arrays element by element in Python); and the bodies, the largest part, travel as raw bytes
    the database need not parse.
    """
    return [
        original,
        _encode_rows(
            [
                _JsonRow(
                    d.delivery_id,
                    d.body_sha256,
                    d.headers,
                    d.scheme,
                    d.event_type,
                    d.received_at,
                    state,
                    error,
                )
                for d, state, error in rows
            ]
        ).decode(),
        [r.delivery.body for r in rows],
    ]


def _insert_sqlite(
    connection: Connection, rows: Sequence[NewRow], original: bool
) -> dict[tuple[str, str], int]:
    as_json = _processor(TABLE.c.headers, connection)
    as_time = _processor(TABLE.c.received_at, connection)
    cursor = _driver(connection).cursor()
    inserted: dict[tuple[str, str], int] = {}
    try:
        for d, state, error in rows:
            cursor.execute(
                _SQLITE_INSERT,
                (
                    d.delivery_id,
                    d.body_sha256,
                    d.body,
                    as_json(d.headers),
                    d.scheme,
                    d.event_type,
                    as_time(d.received_at),
                    state,
                    error,
                    original,
                ),
            )
            found = cursor.fetchone()
            if found is not None:
                inserted[(d.delivery_id, d.body_sha256)] = int(found[0])
    finally:
        cursor.close()
    return inserted


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
