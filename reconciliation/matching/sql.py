"""SQL that must read differently on SQLite and PostgreSQL, in one place, and id batching.

Matching is written once with SQLAlchemy Core and runs on both databases; the only thing they
spell differently is time arithmetic. PostgreSQL adds an interval. SQLite keeps timestamps as
text ('YYYY-MM-DD HH:MM:SS.ffffff', SQLAlchemy's storage format), so a shifted time is built as
the same text with strftime (millisecond precision, padded to six digits) and compared as text,
which orders exactly like time in that format.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from sqlalchemy import ColumnElement, event, func, literal_column, text, type_coerce
from sqlalchemy.orm import Session

from reconciliation.store.types import UTCDateTime

#: Ids per range for callers that split a set-based statement by id (`ranges`). Matching no
#: longer does: one statement per rule hashes the other streams once, not once per batch.
BATCH_ROWS: Final = 200_000

#: Match rows a run must write before it refreshes the table's statistics (once, after the
#: rules, before the backlog is settled): about where autovacuum would (50 rows + 10% of a
#: table of a few hundred thousand rows), but now, not a minute later.
ANALYZE_AFTER_ROWS: Final = 20_000

#: Sort and hash memory for one matching transaction on PostgreSQL: the default 4 MB sends a
#: 200,000-row window sort to disk. SET LOCAL: it ends with the transaction.
WORK_MEM: Final = "64MB"


#: What the planner of a pass's transactions assumes one page read at random costs (a page
#: read in sequence costs 1; PostgreSQL's default, 4, prices a disk seek). A pass reads recent
#: rows and the indexes over them, which are in memory.
RANDOM_PAGE_COST: Final = "1.1"

_TUNE = text(
    f"SELECT set_config('work_mem', '{WORK_MEM}', true), "
    "set_config('plan_cache_mode', 'force_custom_plan', true), set_config('jit', 'off', true), "
    f"set_config('random_page_cost', '{RANDOM_PAGE_COST}', true)"
)


def tune_every_transaction(session: Session) -> None:
    """Per-transaction settings for every transaction of a pass's session (PostgreSQL).

    work_mem: see WORK_MEM. plan_cache_mode: the driver prepares a statement after a few runs,
    and a generic plan for `id > $1` cannot know that $1 is near the top of the table; it scans
    the table where an index range would read ten rows, in every incremental pass. jit: a full
    pass's joins cost enough to be compiled, and the compile is paid again by every pass, for
    statements that spend their time hashing and writing rows, not evaluating expressions.
    random_page_cost (RANDOM_PAGE_COST): for the few thousand new ids of an incremental pass,
    the default cost preferred reading a whole index in order for a merge join, a read that
    grows with the table, over a few thousand index probes. (What each cost: docs/decisions.md,
    "Figures behind the code's choices".)
    set_config(..., true) is SET LOCAL: it ends with each transaction; all of them in one
    statement, one round trip per transaction.
    """
    if session.get_bind().dialect.name != "postgresql":
        return

    def _tune(_session: Session, _transaction: Any, connection: Any) -> None:
        connection.execute(_TUNE)

    event.listen(session, "after_begin", _tune)


#: Statistics target of the pass's own ANALYZE (PostgreSQL's default is 100): it samples 300
#: rows per unit, so 3,000 rows instead of 30,000, a tenth of the pages read. The pass needs
#: the row count and the shape of id columns, which are near unique; autovacuum's next ANALYZE
#: puts the default back.
ANALYZE_TARGET: Final = 10


def refresh_statistics(session: Session, table_name: str) -> None:
    """ANALYZE a table this transaction has just grown a lot (PostgreSQL; SQLite plans alone).

    The planner sizes a table by its last statistics; after a rule writes a few hundred thousand
    match rows, the next statements of the pass (and the next pass, before autovacuum comes
    round) still plan for an empty table: they scanned all of `matches` for the rows above a
    mark where an index range reads a few. ANALYZE reads
    a sample, counts this transaction's own new rows, and commits with it.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT set_config('default_statistics_target', :target, true)"),
            {"target": str(ANALYZE_TARGET)},
        )
        session.execute(text(f"ANALYZE {table_name}"))
        session.execute(text("SET LOCAL default_statistics_target TO DEFAULT"))


def shift_seconds(session: Session, column: ColumnElement[Any], seconds: int) -> ColumnElement[Any]:
    """`column` moved by a whole number of seconds, comparable with other timestamp columns."""
    seconds = int(seconds)
    if session.get_bind().dialect.name == "sqlite":
        shifted = func.strftime("%Y-%m-%d %H:%M:%f", column, f"{seconds:+d} seconds")
        return shifted.concat("000")
    interval: ColumnElement[Any] = literal_column(f"INTERVAL '{seconds} seconds'")
    return type_coerce(column + interval, UTCDateTime())


def ranges(lo: int, hi: int, size: int = BATCH_ROWS) -> Iterator[tuple[int, int]]:
    """Inclusive id ranges of at most `size` ids covering [lo, hi]."""
    start = lo
    while start <= hi:
        yield start, min(hi, start + size - 1)
        start += size
