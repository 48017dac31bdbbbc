"""How every kind of record is pruned: small batches, each its own short transaction.

A batch picks at most `BATCH_ROWS` rows by a keyset (an index range, never a scan of the
history), removes them with DELETE ... RETURNING, hands the returned rows to the archive and
commits. So no transaction holds locks for long, a prune stopped anywhere leaves a store in
which every batch either happened whole or not at all, and the archive holds exactly the rows
RETURNING reported (a batch that does not commit has its archive member cut off again).

A dry run makes the same choices and reads the rows it would remove, but deletes nothing and
writes no archive and no progress marker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, Table, delete, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.retention.archive import Archive
from reconciliation.retention.protection import OpenAlertRefs

#: Most rows one batch removes from its main table. Small enough that a batch's transaction
#: lasts milliseconds and its row locks never hold up the receiver or a poller; large enough
#: that a backlog of a day's deliveries (about 1.4 million at 16/s) clears in minutes.
BATCH_ROWS: Final = 500

#: Reports progress after each committed batch: (record kind, rows removed by that batch).
BatchReport = Callable[[str, int], None]


def _ignore(_kind: str, _rows: int) -> None:
    return None


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
    removed: dict[str, int] = field(default_factory=dict)

    def count(self, table: str, rows: int) -> None:
        self.removed[table] = self.removed.get(table, 0) + rows


def take_rows(
    session: Session, table: Table, condition: ColumnElement[bool], dry_run: bool
) -> list[dict[str, Any]]:
    """Remove the rows matching `condition` and return them whole (dry run: only read them)."""
    if dry_run:
        found = session.execute(select(table).where(condition))
    else:
        found = session.execute(delete(table).where(condition).returning(*table.c))
    return [dict(row._mapping) for row in found]


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
        ctx.count(table, len(rows))
        total += len(rows)
    if total:
        ctx.on_batch(kind, total)
    return removed
