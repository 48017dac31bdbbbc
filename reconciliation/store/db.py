"""Engines and sessions for both databases, tuned for how recon uses them.

SQLite runs in WAL mode with a busy timeout so the web process and worker threads of the
embedded default can write side by side; foreign keys are switched on (they are off by default
there). PostgreSQL gets a modest pool with pre-ping, so a restarted database is noticed at the
next checkout rather than as a failed request.

A writer (the web process, the workers, `recon db upgrade`) may create the SQLite file and its
folder: that is how the embedded default starts from nothing. A reader asks for `must_exist`,
so a mistyped DATABASE_URL is reported instead of answered with an empty store.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from foundation import make_state_dir
from reconciliation.store.types import AMOUNT_DIGITS, to_amount

#: Seconds a SQLite writer waits for the lock before giving up.
SQLITE_BUSY_TIMEOUT_SECONDS = 30

#: Mode of a SQLite store recon creates: owner read and write only.
STORE_FILE_MODE: Final = 0o600


class StoreMissingError(Exception):
    """There is no store where the URL points, and the caller must not create one."""


def make_engine(url: str, *, must_exist: bool = False, **kwargs: Any) -> Engine:
    """An engine for `url`, SQLite or PostgreSQL, with the settings recon relies on.

    `must_exist`: raise StoreMissingError when a SQLite file is not there, rather than create it
    and its folder. (Connecting to PostgreSQL never creates a database, so its absence shows as
    the driver's own error at the first connection.)
    """
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1].split("?", 1)[0]
        if path and path != ":memory:":
            if must_exist and not Path(path).is_file():
                raise StoreMissingError(f"there is no store at {path}")
            _create_private(Path(path))
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            **kwargs,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("connect_args", {"connect_timeout": 5})
    return create_engine(url, **kwargs)


def _create_private(path: Path) -> None:
    """The SQLite file's folder (0700) and the file itself (0600), if they are missing.

    The store holds the encrypted webhook secrets, every delivery's body and the ledger: it is
    the owner's alone, like the key file beside it, whatever the umask would give. SQLite
    creates its -wal and -shm files with the mode of the database file. Existing files and
    folders keep the mode their owner chose.
    """
    make_state_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, STORE_FILE_MODE))


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_SECONDS * 1000}")
    cursor.close()
    _register_amount_functions(dbapi_connection)


class _AmountSum:
    """SQLite aggregate amount_sum(): exact at any size; NULL over no rows, as sum()."""

    def __init__(self) -> None:
        self.total: int | None = None

    def step(self, value: object) -> None:
        if value is not None:
            self.total = (self.total or 0) + to_amount(value)

    def finalize(self) -> str | None:
        return None if self.total is None else str(self.total)


class _AmountMax:
    """SQLite aggregate amount_max(): the largest amount by value."""

    def __init__(self) -> None:
        self.top: int | None = None

    def step(self, value: object) -> None:
        if value is not None:
            amount = to_amount(value)
            self.top = amount if self.top is None else max(self.top, amount)

    def finalize(self) -> str | None:
        return None if self.top is None else str(self.top)


#: amount_order's key: a sign digit, then AMOUNT_DIGITS + 1 digits, so text order is value order.
_ORDER_WIDTH: Final = AMOUNT_DIGITS + 1
_ORDER_SPAN: Final = 10**_ORDER_WIDTH


def _amount_order(value: object) -> str | None:
    if value is None:
        return None
    amount = to_amount(value)
    if amount >= 0:
        return f"1{amount:0{_ORDER_WIDTH}d}"
    return f"0{_ORDER_SPAN + amount:0{_ORDER_WIDTH}d}"


def _scalar(operation: Any) -> Any:
    def apply(value: object) -> str | None:
        return None if value is None else str(operation(to_amount(value)))

    return apply


def _register_amount_functions(dbapi_connection: Any) -> None:
    """The SQL functions amounts need on SQLite (reconciliation.store.types.Amount): its own
    sum() is 64-bit and fails past 2**63, and text compares as text, not by value."""
    create = dbapi_connection.create_function
    create("amount_neg", 1, _scalar(lambda a: -a), deterministic=True)
    create("amount_abs", 1, _scalar(abs), deterministic=True)
    create("amount_order", 1, _amount_order, deterministic=True)
    dbapi_connection.create_aggregate("amount_sum", 1, _AmountSum)
    dbapi_connection.create_aggregate("amount_max", 1, _AmountMax)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded values after commit, so results can be returned and logged."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error."""
    with factory() as session, session.begin():
        yield session
