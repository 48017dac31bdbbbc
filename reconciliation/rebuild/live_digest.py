"""The live derived state's digest as of the moment the rebuild read the facts (PostgreSQL).

The rebuild reads the facts in one REPEATABLE READ transaction and exports its snapshot; a
second connection imports it at once (`SET TRANSACTION SNAPSHOT`), so the live digest describes
the derived state of exactly the store the facts came from, even if a pass commits meanwhile.
It is computed on that connection, in a thread, while this process runs the pass on the
scratch: that pass keeps one CPU busy, and the digest is the database's work on the other.

Rows are shown only for a table whose digests differ, and they must be that same moment's rows
too, or a store that kept moving lists rows no digest disagreed about (its newer backlog, say)
and hides the one that did. So the connection keeps its snapshot after the digest until the
comparison asks for the rows of the tables that differ (`copy_rows`): it copies them into the
scratch, where the comparison subtracts them from the rebuilt ones.

SQLite has no snapshot to share; there the live digest is taken after the pass, as before
(`compare.compare` without a digest).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Final

from sqlalchemy import Engine, Table
from sqlalchemy.schema import CreateTableAs

from reconciliation.rebuild.digest import StateDigest, state_digest
from reconciliation.rebuild.facets import BY_NAME, facet_rows
from reconciliation.rebuild.horizon import Horizon

#: Longest wait for the second connection to import the snapshot (it normally takes
#: milliseconds; the exporting transaction stays open until it has).
IMPORT_TIMEOUT_SECONDS: Final = 30.0
#: What `pg_export_snapshot()` returns (hex groups and dashes): the only text put in the SET.
_SNAPSHOT_ID: Final = re.compile(r"[0-9A-Fa-f-]{1,64}")
#: Prefix of the scratch tables holding the live rows of a table that differs.
COPY_PREFIX: Final = "live_"


class LiveDigestError(Exception):
    """The live digest could not be taken in the rebuild's snapshot."""


class SnapshotDigest:
    """Imports the snapshot on `start`, digests after `go`, hands the digest to `result`, then
    copies the rows `copy_rows` asks for (or none: `done`).

    Use as a context manager: leaving it before `done` (an error in the rebuild) abandons what
    is left and ends the thread and its transaction.
    """

    def __init__(self, live: Engine, snapshot: str, horizon: Horizon | None = None) -> None:
        if not _SNAPSHOT_ID.fullmatch(snapshot):
            raise LiveDigestError(f"{snapshot!r} is not a snapshot id")
        self._live, self._snapshot, self._horizon = live, snapshot, horizon
        self._imported, self._go = threading.Event(), threading.Event()
        self._digested, self._asked = threading.Event(), threading.Event()
        self._abandoned = False
        self._wanted: list[CreateTableAs] = []
        self._digest: StateDigest | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rebuild-live-digest", daemon=True)

    def _run(self) -> None:
        try:
            with self._live.connect() as connection, connection.begin():
                connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                # A literal: SET takes no bound parameter (the id was checked in __init__).
                connection.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{self._snapshot}'")
                self._imported.set()
                self._go.wait()
                if self._abandoned:
                    return
                self._digest = state_digest(connection, None, self._horizon)
                self._digested.set()
                self._asked.wait()
                for build in self._wanted if not self._abandoned else []:
                    connection.execute(build)
        except Exception as exc:  # noqa: BLE001 - not lost: `result` raises it in the rebuild's thread
            self._error = exc
        finally:
            self._imported.set()
            self._digested.set()

    def __enter__(self) -> SnapshotDigest:
        self._thread.start()
        if not self._imported.wait(IMPORT_TIMEOUT_SECONDS):
            self._abandon()
            raise LiveDigestError("the live digest's connection did not import the snapshot")
        if self._error is not None:
            raise LiveDigestError(f"the live digest could not start: {self._error}")
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._thread.is_alive():
            self._abandon()

    def _abandon(self) -> None:
        self._abandoned = True
        self._go.set()
        self._asked.set()
        self._thread.join()

    def _failed(self) -> None:
        if self._error is not None:
            raise LiveDigestError(f"the live digest failed: {self._error}") from self._error

    def go(self) -> None:
        """Start digesting (the facts are read; the pass on the scratch is about to run)."""
        self._go.set()

    def result(self) -> StateDigest:
        """The digest (waits for it)."""
        self._go.set()
        self._digested.wait()
        self._failed()
        assert self._digest is not None
        return self._digest

    def copy_rows(self, schema: str, names: Sequence[str]) -> dict[str, Table]:
        """Copy the named facets' live rows, as of the snapshot, into tables of the scratch
        `schema` (`live_<facet>`), and end the snapshot's transaction; the tables by facet."""
        dialect = self._live.dialect
        builds = {
            name: CreateTableAs(
                facet_rows(BY_NAME[name], None, dialect, self._horizon),
                f"{COPY_PREFIX}{name}",
                schema=schema,
            )
            for name in names
        }
        self._wanted = list(builds.values())
        self.done()
        return {name: build.table for name, build in builds.items()}

    def done(self) -> None:
        """End the snapshot's transaction (after any rows asked for are copied)."""
        self._asked.set()
        self._thread.join()
        self._failed()
