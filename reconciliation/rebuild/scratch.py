"""Where a rebuild writes: a scratch copy of the store's schema beside the live one.

PostgreSQL: a schema (`recon_rebuild`) in the same database, so copying the facts and comparing
the results are single SQL statements between two schemas, and the pass runs on it unchanged
through a `search_path` that names only the scratch schema. SQLite: a file beside the store
(`<store>.rebuild`), attached to a live connection for copying and comparing, and opened as a
store of its own for the pass. Either way the live tables are only read until `swap`.

The scratch is filled in bulk and thrown away, so it is made for that: on PostgreSQL its tables
are UNLOGGED (no write-ahead log for rows nobody will recover after a crash: a crashed rebuild
starts over), and on both databases the tables are created without their secondary indexes,
which `build_indexes` adds once the facts and notifications are in (one sorted build per index
instead of a million index insertions), before the pass that needs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from sqlalchemy import Connection, Engine, Index

from reconciliation.store.db import make_engine
from reconciliation.store.models import Base

#: The scratch schema's name (PostgreSQL), and the name the scratch file is attached as (SQLite).
SCRATCH: Final = "recon_rebuild"
#: Appended to a SQLite store's file name for its scratch file.
SQLITE_SUFFIX: Final = ".rebuild"


class ScratchError(Exception):
    """The scratch store cannot be made where it must go; the message says why."""


class Scratch:
    """The live store and its scratch copy: `engine` opens the scratch as a store of its own.

    The engine is made on first use: opening a SQLite store creates its file, and asking
    whether a scratch exists must not make one.
    """

    def __init__(self, live: Engine, path: Path | None) -> None:
        self.live = live
        #: The SQLite scratch file (None on PostgreSQL).
        self.path = path
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        """The scratch as a store of its own (the pass runs on it)."""
        if self._engine is None:
            if self.path is not None:
                self._engine = make_engine(f"sqlite:///{self.path}")
            else:
                url = self.live.url.render_as_string(hide_password=False)
                self._engine = make_engine(
                    url,
                    connect_args={"connect_timeout": 5, "options": f"-c search_path={SCRATCH}"},
                    pool_size=2,
                    max_overflow=4,
                )
        return self._engine

    @property
    def schema(self) -> str:
        """How a live connection (`workbench`) names the scratch tables."""
        return SCRATCH

    def describe(self) -> str:
        """Where the rebuilt state is, for a person to look at it."""
        if self.path is not None:
            return f"SQLite file {self.path}"
        return f"schema {SCRATCH} of the live database"

    def close(self) -> None:
        """Release the scratch engine's connections (the scratch itself stays)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def _sqlite_path(engine: Engine) -> Path:
    database = engine.url.database
    if not database or database == ":memory:":
        raise ScratchError("an in-memory SQLite store has no file to put a scratch copy beside")
    return Path(database)


def scratch_for(live: Engine) -> Scratch:
    """The scratch of this store (not created: see `create`)."""
    if live.dialect.name == "sqlite":
        return Scratch(live, Path(f"{_sqlite_path(live)}{SQLITE_SUFFIX}"))
    if live.dialect.name != "postgresql":
        raise ScratchError(f"rebuild supports SQLite and PostgreSQL, not {live.dialect.name}")
    return Scratch(live, None)


def secondary_indexes() -> list[Index]:
    """The store's indexes that no constraint needs (not unique): built after the bulk fill.

    Unique indexes stay from the start, so the fill is held to the same uniqueness as the live
    store (a second notification for one delivery fails at once, not at index build).
    """
    return [
        index
        for table in Base.metadata.sorted_tables
        for index in sorted(table.indexes, key=lambda i: str(i.name))
        if not index.unique
    ]


def create(scratch: Scratch) -> None:
    """A fresh, empty scratch with every table of the store but no secondary index (whatever
    was there is dropped); `build_indexes` adds them once the scratch is filled."""
    drop(scratch)
    if scratch.path is None:
        with scratch.live.begin() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {SCRATCH}")
    Base.metadata.create_all(scratch.engine)
    with scratch.engine.begin() as connection:
        for index in secondary_indexes():
            index.drop(connection)
        if scratch.path is None:
            # Referencing tables first: a logged table may not reference an unlogged one.
            for table in reversed(Base.metadata.sorted_tables):
                connection.exec_driver_sql(f"ALTER TABLE {SCRATCH}.{table.name} SET UNLOGGED")


def build_indexes(scratch: Scratch) -> None:
    """Add the secondary indexes `create` left out (run once the scratch is filled)."""
    with scratch.engine.begin() as connection:
        for index in secondary_indexes():
            index.create(connection)


def drop(scratch: Scratch) -> None:
    """Remove the scratch (schema or file); nothing of the live store is touched."""
    scratch.close()
    if scratch.path is None:
        with scratch.live.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA IF EXISTS {SCRATCH} CASCADE")
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{scratch.path}{suffix}").unlink(missing_ok=True)


def exists(scratch: Scratch) -> bool:
    """Whether a scratch is there (left by an earlier `recon rebuild`)."""
    if scratch.path is not None:
        return scratch.path.is_file()
    with scratch.live.connect() as connection:
        found = connection.exec_driver_sql(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %(name)s",
            {"name": SCRATCH},
        ).first()
    return found is not None


def analyze(scratch: Scratch) -> None:
    """Give the planner statistics of the freshly filled scratch before the pass runs on it.

    Without them PostgreSQL plans the pass's anti-joins over a million rows as nested loops
    (it takes a just-filled table for nearly empty until autovacuum comes by): measured, a pass
    that takes seconds on the live store ran for over a quarter of an hour on the scratch.
    """
    with scratch.engine.connect() as connection:
        if scratch.path is None:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                f"ANALYZE {', '.join(f'{SCRATCH}.{t}' for t in Base.metadata.tables)}"
            )
        else:
            connection.exec_driver_sql("ANALYZE")
            connection.commit()


@contextmanager
def workbench(scratch: Scratch) -> Iterator[Connection]:
    """A live connection that also sees the scratch tables as schema `recon_rebuild`.

    SQLite attaches the scratch file for the connection's life and detaches it before the
    connection goes back to the pool, so no other user of the pool sees it.
    """
    with scratch.live.connect() as connection:
        if scratch.path is None:
            yield connection
            return
        connection.exec_driver_sql(f"ATTACH DATABASE ? AS {SCRATCH}", (str(scratch.path),))
        # The scratch is disposable: a crash while filling it means starting over, so no fsyncs.
        connection.exec_driver_sql(f"PRAGMA {SCRATCH}.synchronous=OFF")
        connection.commit()
        try:
            yield connection
        finally:
            if connection.in_transaction():
                connection.rollback()
            connection.exec_driver_sql(f"DETACH DATABASE {SCRATCH}")
