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

from foundation.secret_key import make_state_dir

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


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded values after commit, so results can be returned and logged."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error."""
    with factory() as session, session.begin():
        yield session
