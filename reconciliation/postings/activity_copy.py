"""PostgreSQL's page write: binary COPY into a staging table, then one statement for the rest.

This is the catch-up's hot path (a million postings), so a page costs four round trips and no
per-row Python beyond handing the driver a tuple:

1. `COPY recon_posting_stage FROM STDIN (FORMAT BINARY)`: the driver formats the rows in C.
2. (the COPY's data and its end)
3. One statement that moves the staged rows into `postings` (skipping any already stored),
   moves the cursor and renews the lease only if the lease is still ours, and turns off the
   WAL flush wait for this transaction. Its row count is the cursor UPDATE's: 1, or 0 when the
   lease was lost (the caller then rolls everything back).
4. COMMIT.

The staging table is temporary (one per connection, created on first use) and empties itself
at commit. It is created inside the first page's transaction, so a page that does not commit
(a lost lease, an error) takes the table with it: `page_transaction` then forgets it, and the
connection's next page creates it again. The cursor UPDATE is the one `reconciliation.postings.activity` runs on SQLite, compiled
once for PostgreSQL, so the two paths cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy.dialects.postgresql.psycopg import dialect as psycopg_dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql import Update

from reconciliation.store.models import UNMATCHED
from upstream import Posting as WirePosting
from upstream import ValueUnit

#: The per-connection staging table and its COPY.
STAGE_TABLE: Final = "recon_posting_stage"
_CREATE_STAGE: Final = f"""
    CREATE TEMPORARY TABLE IF NOT EXISTS {STAGE_TABLE} (
        journal_ref uuid, line_ref uuid, receipt_ref uuid, posted_at timestamptz,
        side text, effect text, kind text, amount_minor numeric, currency text,
        partition text, normal_side text
    ) ON COMMIT DELETE ROWS
"""
_COPY_STAGE: Final = f"COPY {STAGE_TABLE} FROM STDIN (FORMAT BINARY)"
_STAGE_TYPES: Final = (
    "uuid",
    "uuid",
    "uuid",
    "timestamptz",
    "text",
    "text",
    "text",
    "numeric",
    "text",
    "text",
    "text",
)

#: Step 3's first half. `set_config(.., true)` is `SET LOCAL synchronous_commit = off`: a page's
#: commit does not wait for its WAL flush. Safe here: if a crash loses the last pages, it loses
#: their cursor moves with them (same transaction), and the reader simply reads them again; and
#: any later transaction that commits synchronously flushes the WAL up to and including these
#: pages first, so nothing built on them can outlive them. The setting is read at COMMIT, so
#: where in the transaction it is made does not matter; joining the one-row `async_commit` to
#: the insert's SELECT is what makes PostgreSQL evaluate it (an unreferenced CTE is not run).
_MOVE_STAGE: Final = f"""
    WITH async_commit AS (
        SELECT set_config('synchronous_commit', 'off', true) AS setting
    ),
    moved AS (
        INSERT INTO postings (journal_ref, line_ref, receipt_ref, holding_id, posted_at, side,
            effect, kind, amount_minor, currency, partition, normal_side, ingested_at,
            match_status)
        SELECT journal_ref, line_ref, receipt_ref, %(holding)s, posted_at, side, effect, kind,
            amount_minor, currency, partition, normal_side, %(now)s, '{UNMATCHED}'
        FROM {STAGE_TABLE} CROSS JOIN async_commit
        ON CONFLICT (journal_ref, line_ref) DO NOTHING
    )
"""


@dataclass(frozen=True, slots=True)
class PageStatement:
    """Step 3 as SQL text, with the values the cursor UPDATE fixes (such as its error count)."""

    sql: str
    fixed: Mapping[str, Any]


def compile_move(move_cursor: Update) -> PageStatement:
    """Step 3's statement: the staged move, then `move_cursor` as compiled for PostgreSQL."""
    compiled = move_cursor.compile(dialect=psycopg_dialect())  # type: ignore[no-untyped-call]
    return PageStatement(sql=_MOVE_STAGE + str(compiled), fixed=dict(compiled.params))


@contextmanager
def page_transaction(session: Session) -> Iterator[None]:
    """`session.begin()` for one page's write; if it does not commit, the stage is forgotten.

    The connection's info outlives the transaction (it lives as long as the database
    connection, across the pool): a mark left after the CREATE was rolled back would fail
    every later page on that connection with "relation does not exist".
    """
    info: dict[Any, Any] | None = None
    try:
        with session.begin():
            info = session.connection().info
            yield
    except BaseException:
        if info is not None:
            info.pop(STAGE_TABLE, None)
        raise


def copy_page(
    session: Session,
    entries: Sequence[WirePosting],
    move: PageStatement,
    params: Mapping[str, Any],
) -> int:
    """Stage `entries`, then store them and move the cursor; returns the cursor rows moved.

    `params` are the cursor UPDATE's bind values plus `holding` and `now` for the insert. Runs
    inside the caller's transaction (which commits, or rolls back on an error or a lost lease).
    """
    connection = session.connection()
    driver = connection.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor:
        if not connection.info.get(STAGE_TABLE):
            # Once per database connection (the info dict lives as long as it does).
            cursor.execute(_CREATE_STAGE)
            connection.info[STAGE_TABLE] = True
        with cursor.copy(_COPY_STAGE) as copy:
            copy.set_types(list(_STAGE_TYPES))
            write_row = copy.write_row
            # A page's postings share one ValueUnit object (see parse_postings): name its
            # currency once, not once per row.
            unit: ValueUnit | None = None
            currency = ""
            for e in entries:
                if e.value_unit is not unit:
                    unit = e.value_unit
                    currency = str(unit)
                write_row(
                    (
                        e.journal_ref,
                        e.line_ref,
                        e.receipt_ref,
                        e.posted_at,
                        e.posting_side,
                        e.balance_effect,
                        e.journal_kind,
                        e.amount_minor_units,
                        currency,
                        e.ledger_partition,
                        e.ledger_normal_side,
                    )
                )
        cursor.execute(move.sql, {**move.fixed, **params})
        return int(cursor.rowcount)
