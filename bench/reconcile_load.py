"""Writing bench/reconcile_data.py's streams into a store: COPY on PostgreSQL, executemany on
SQLite, each stream consumed as it is generated."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reconcile_data import (
    HOLDING_COLUMNS,
    ISO,
    LOCATOR_COLUMNS,
    NOTIFICATION_COLUMNS,
    POSTING_COLUMNS,
    SNAPSHOT_COLUMNS,
    TRANSFER_COLUMNS,
    holdings_rows,
    locator_rows,
    snapshot_rows,
)


def _streams(data: dict[str, Any], *, with_holdings: bool = False) -> list[tuple[str, str, Any]]:
    """(table, columns, rows) in foreign-key order: the three streams, after the holdings and
    their locators when a store is filled from nothing."""
    streams: list[tuple[str, str, Any]] = []
    if with_holdings:
        streams += [
            ("holdings", HOLDING_COLUMNS, holdings_rows()),
            ("locators", LOCATOR_COLUMNS, locator_rows()),
        ]
    streams += [
        ("transfers", TRANSFER_COLUMNS, data["transfers"]()),
        ("postings", POSTING_COLUMNS, data["postings"]()),
        ("notifications", NOTIFICATION_COLUMNS, data["notifications"]()),
    ]
    return streams


def load_postgres(url: str, data: dict[str, Any]) -> None:
    import psycopg

    with (
        psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn,
        conn.cursor() as cur,
    ):
        for table, columns, rows in _streams(data, with_holdings=True):
            with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        for table in ("holdings", "locators", "transfers", "postings", "notifications"):
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
            )
        conn.commit()
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def sqlite_value(value: Any) -> Any:
    """A generated value as the SQLite store holds it (UUIDs as hex, UTC times as text)."""
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None).strftime(ISO)
    return value


def load_sqlite(path: Path, data: dict[str, Any]) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    for table, columns, rows in _streams(data, with_holdings=True):
        marks = ", ".join("?" for _ in columns.split(","))
        conn.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})",
            (tuple(sqlite_value(v) for v in row) for row in rows),
        )
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()


def load_sqlite_url(url: str, data: dict[str, Any]) -> None:
    load_sqlite(Path(url.removeprefix("sqlite:///")), data)


def load_with_snapshots(loader: Any, url: str, data: dict[str, Any]) -> None:
    """Load the streams (which sums each holding's balance on the way), then the snapshots."""
    loader(url, data)
    snapshot_at = data["last"] + timedelta(hours=1)
    balances: list[int] = data["balances"]
    if loader is load_postgres:
        import psycopg

        with (
            psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn,
            conn.cursor() as cur,
        ):
            with cur.copy(f"COPY balance_snapshots ({SNAPSHOT_COLUMNS}) FROM STDIN") as copy:
                for row in snapshot_rows(balances, snapshot_at):
                    copy.write_row(row)
            conn.commit()
    else:
        lite = sqlite3.connect(url.removeprefix("sqlite:///"))
        lite.executemany(
            f"INSERT INTO balance_snapshots ({SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (tuple(sqlite_value(v) for v in row) for row in snapshot_rows(balances, snapshot_at)),
        )
        lite.commit()
        lite.close()


def append_records(kind: str, url: str, extra: dict[str, Any]) -> None:
    """The 10,000 new records, written the way the ingesting processes would (committed)."""
    if kind == "postgres":
        import psycopg

        with (
            psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn,
            conn.cursor() as cur,
        ):
            for table, columns, rows in _streams(extra):
                numbered = columns.split(", ", 1)[1]  # let the database number them
                with cur.copy(f"COPY {table} ({numbered}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row[1:])
            conn.commit()
        return
    lite = sqlite3.connect(url.removeprefix("sqlite:///"))
    for table, columns, rows in _streams(extra):
        numbered = columns.split(", ", 1)[1]
        marks = ", ".join("?" for _ in numbered.split(","))
        lite.executemany(
            f"INSERT INTO {table} ({numbered}) VALUES ({marks})",
            (tuple(sqlite_value(v) for v in row[1:]) for row in rows),
        )
    lite.commit()
    lite.close()
