"""How every kind of record is pruned: small batches, each its own short transaction.

A batch picks at most `BATCH_ROWS` rows by a keyset (an index range, never a scan of the
history), removes them with DELETE ... RETURNING, hands the returned rows to the archive and
commits. So no transaction holds locks for long, a prune stopped anywhere leaves a store in
which every batch either happened whole or not at all, and the archive holds exactly the rows
RETURNING reported (a batch that does not commit has its archive member cut off again).

A dry run makes the same choices and reads the rows it would remove, but deletes nothing and
writes no archive and no progress marker. Two kinds may read the same row then (a transfer's
middle changes: compacted as history, then again with the whole transfer), so a dry run counts
the rows of `SHARED_TABLES` once each, by id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Column, ColumnElement, Table, delete, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.retention.archive import Archive
from reconciliation.retention.protection import OpenAlertRefs
from reconciliation.store.in_lists import chunks

#: Most rows one batch removes from its main table. Small enough that a batch's transaction
#: lasts milliseconds and its row locks never hold up the receiver or a poller; large enough
#: that a backlog of a day's deliveries (about 1.4 million at 16/s) clears in minutes.
BATCH_ROWS: Final = 500

#: Tables two kinds of record remove rows from (see the module docstring).
SHARED_TABLES: Final = frozenset({"transfer_changes"})

#: Reports progress after each committed batch: (record kind, rows removed by that batch).
BatchReport = Callable[[str, int], None]


#: Holds recon's one-pass-at-a-time lease around one batch: yields whether it holds it.
PassHold = Callable[[], AbstractContextManager[bool]]


def _ignore(_kind: str, _rows: int) -> None:
    return None


@contextmanager
def no_pass_hold() -> Iterator[bool]:
    """Batches that no pass can race with (or a caller that runs no pass) need no lease."""
    yield True


@dataclass(slots=True)
class PruneContext:
    """What every kind's pruning shares within one run."""

    factory: sessionmaker[Session]
    now: datetime
    dry_run: bool
    archive: Archive | None
    guard: OpenAlertRefs
    batch_rows: int = BATCH_ROWS
    on_batch: BatchReport = _ignore
    hold_pass: PassHold = no_pass_hold
    removed: dict[str, int] = field(default_factory=dict)
    #: Dry run: ids of `SHARED_TABLES` rows already counted.
    counted: dict[str, set[int]] = field(default_factory=dict)
    #: Each holding's latest balance check, as first read this run (members.latest_checks).
    balance_basis: dict[int, tuple[datetime, int] | None] = field(default_factory=dict)

    def count(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Add a batch's rows to the run's tally; how many were new to it."""
        if self.dry_run and table in SHARED_TABLES:
            seen = self.counted.setdefault(table, set())
            fresh = {row["id"] for row in rows} - seen
            seen |= fresh
            found = len(fresh)
        else:
            found = len(rows)
        self.removed[table] = self.removed.get(table, 0) + found
        return found


def take_rows(
    session: Session, table: Table, condition: ColumnElement[bool], dry_run: bool
) -> list[dict[str, Any]]:
    """Remove the rows matching `condition` and return them whole (dry run: only read them)."""
    if dry_run:
        found = session.execute(select(table).where(condition))
    else:
        found = session.execute(delete(table).where(condition).returning(*table.c))
    return [dict(row._mapping) for row in found]


def take_in(
    session: Session, table: Table, column: Column[Any], ids: Iterable[Any], dry_run: bool
) -> list[dict[str, Any]]:
    """`take_rows` for the rows whose `column` is one of `ids`, a bounded list at a time."""
    taken: list[dict[str, Any]] = []
    for batch in chunks(sorted(set(ids), key=str)):
        taken += take_rows(session, table, column.in_(batch), dry_run)
    return taken


def commit_batch(
    ctx: PruneContext, kind: str, work: Callable[[Session], Mapping[str, list[dict[str, Any]]]]
) -> Mapping[str, list[dict[str, Any]]]:
    """Run one batch in its own transaction; archive what it removed before the commit.

    `work` removes rows (through `take_rows`) and returns them by table name, main table first.
    """
    mark = ctx.archive.mark() if ctx.archive is not None else {}
    written: dict[str, int] = {}
    try:
        with ctx.factory() as session, session.begin():
            removed = work(session)
            if ctx.dry_run:
                session.rollback()
            elif ctx.archive is not None:
                for table, rows in removed.items():
                    written[table] = ctx.archive.write(table, rows)
    except BaseException:
        if ctx.archive is not None and written:
            ctx.archive.undo(mark, written)
        raise
    total = 0
    for table, rows in removed.items():
        total += ctx.count(table, rows)
    if total:
        ctx.on_batch(kind, total)
    return removed
