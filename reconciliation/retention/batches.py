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

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from itertools import takewhile
from typing import Any, Final

from sqlalchemy import Column, ColumnElement, Select, Table, delete, or_, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.retention.archive import Archive
from reconciliation.retention.protection import OpenAlertRefs
from reconciliation.store import watermarks
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


#: What a batch removed (or, dry run, would remove), by table name, main table first.
Removed = dict[str, list[dict[str, Any]]]
#: One batch: what it removed, and whether another batch may find more.
Work = Callable[[Session], tuple[Removed, bool]]


def commit_batch(ctx: PruneContext, kind: str, work: Work) -> bool:
    """Run one batch in its own transaction; archive what it removed before the commit.

    `work` removes rows (through `take_rows`) and returns them by table name, main table first,
    with whether more may follow (returned here).
    """
    mark = ctx.archive.mark() if ctx.archive is not None else {}
    try:
        with ctx.factory() as session, session.begin():
            removed, more = work(session)
            if ctx.dry_run:
                session.rollback()
            elif ctx.archive is not None:
                for table, rows in removed.items():
                    ctx.archive.write(table, rows)
    except BaseException:
        if ctx.archive is not None:
            ctx.archive.undo(mark)
        raise
    total = 0
    for table, rows in removed.items():
        total += ctx.count(table, rows)
    if total:
        ctx.on_batch(kind, total)
    return more


def run_batches(ctx: PruneContext, kind: str, work: Work, *, leased: bool = False) -> bool:
    """Commit batches of `work` until it finds no more; with `leased`, each holds the pass lease
    (`PruneContext.hold_pass`), and False means a pass kept it too long (the rest waits)."""
    more = True
    while more:
        with ctx.hold_pass() if leased else no_pass_hold() as held:
            if not held:
                return False
            more = commit_batch(ctx, kind, work)
    return True


def by_keyset(
    ctx: PruneContext,
    kind: str,
    pick: Callable[[Session], Select[Any]],
    at: Column[Any],
    judge: Callable[[Session, list[Any]], Removed],
    *,
    leased: bool = False,
) -> bool:
    """Batches over the rows `pick` selects (their id and `at` among them), oldest `at` first, a
    keyset page of the (`at`, id) index each: `judge` removes what of a page may go."""
    row_id = at.table.c.id
    after: tuple[Any, int] | None = None

    def work(session: Session) -> tuple[Removed, bool]:
        nonlocal after
        query = pick(session).order_by(at, row_id).limit(ctx.batch_rows)
        if after is not None:
            query = query.where(at >= after[0], or_(at > after[0], row_id > after[1]))
        picked = list(session.execute(query))
        if not picked:
            return {}, False
        after = (picked[-1]._mapping[at], picked[-1].id)
        return judge(session, picked), len(picked) == ctx.batch_rows

    return run_batches(ctx, kind, work, leased=leased)


def by_id(
    ctx: PruneContext,
    kind: str,
    rows: Select[Any],
    row_id: Column[Any],
    beyond: Callable[[Session], Callable[[Any], bool]],
    judge: Callable[[Session, list[Any], int], Removed],
    *,
    through: str | None = None,
    leased: bool = False,
) -> bool:
    """Batches over `rows` in `row_id` order, each up to the first row `beyond(session)` says is
    out of reach (none after it is read this run): `judge` gets the rows before it and the last
    id judged. With `through`, the scan starts where that watermark says the last run stopped,
    and moves it on."""
    after = 0
    if through is not None:
        with ctx.factory() as session:
            after = watermarks.read(session, through, 0)

    def work(session: Session) -> tuple[Removed, bool]:
        nonlocal after
        out_of_reach = beyond(session)
        query = rows.where(row_id > after).order_by(row_id).limit(ctx.batch_rows)
        page = session.execute(query).all()
        judged = list(takewhile(lambda row: not out_of_reach(row), page))
        last = judged[-1].id if judged else after
        removed = judge(session, judged, last)
        if through is not None and last > after and not ctx.dry_run:
            watermarks.write(session, through, last, ctx.now)
        after = last
        return removed, len(judged) == ctx.batch_rows

    return run_batches(ctx, kind, work, leased=leased)
