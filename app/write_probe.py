"""Can the store take a delivery now? A write lock, asked for within a bound and given back.

`SELECT 1` answers while nothing commits: a lock held on the inbox table, a SQLite file made
read-only or deleted under the running process (its open connections keep writing into the
deleted file, which nothing will ever read). The probe asks for what a delivery's commit needs
and waits no longer than a short bound:

- PostgreSQL: a ROW EXCLUSIVE lock on the inbox table (what an INSERT takes), with
  `lock_timeout` and `statement_timeout` set for this transaction only, then rolled back;
- SQLite: the file is still there and writable, and a fresh connection (never the pool's, so
  a deleted or re-permissioned file is seen as it is now) gets the write lock with
  `BEGIN IMMEDIATE` within the bound, then rolls back.

Nothing is written either way.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final

from sqlalchemy import Engine

from reconciliation.store import Delivery

#: The table a delivery's commit writes to.
INBOX_TABLE: Final = Delivery.__tablename__


def store_accepts_writes(engine: Engine, bound_seconds: float) -> str | None:
    """None when a delivery could be committed now; otherwise what stops it, in a few words."""
    try:
        if engine.dialect.name == "postgresql":
            return _postgres(engine, bound_seconds)
        return _sqlite(engine, bound_seconds)
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot take a write now"
        return type(exc).__name__


def _postgres(engine: Engine, bound_seconds: float) -> str | None:
    bound = f"{max(1, int(bound_seconds * 1000))}ms"
    with engine.connect() as connection, connection.begin() as transaction:
        connection.exec_driver_sql(
            "SELECT set_config('lock_timeout', %(b)s, true), "
            "set_config('statement_timeout', %(b)s, true)",
            {"b": bound},
        )
        connection.exec_driver_sql(f'LOCK TABLE "{INBOX_TABLE}" IN ROW EXCLUSIVE MODE')
        transaction.rollback()
    return None


def _sqlite(engine: Engine, bound_seconds: float) -> str | None:
    database = engine.url.database
    if not database or database == ":memory:":
        return None
    path = Path(database).absolute()
    if not path.is_file():
        return "the store file is gone"
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
        return "the store file or its folder is read-only"
    connection = sqlite3.connect(
        f"{path.as_uri()}?mode=rw", uri=True, timeout=bound_seconds, isolation_level=None
    )
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
    finally:
        connection.close()
    return None
