"""Temporary tables holding one rule's candidates, so they are computed once.

A rule computes its candidates (a join plus window counts) once, with CREATE TEMPORARY TABLE
... AS SELECT, then writes the unambiguous ones into matches and reads the ambiguous ones back.
On PostgreSQL that form may run the join with parallel workers, which INSERT ... SELECT never
does (docs/decisions.md, "Figures behind the code's choices"); temporary tables are private
to the connection and not WAL-logged. A candidate table lives inside the caller's transaction
and is dropped at the end of the rule; a kept table (what one rule leaves for the next) is
dropped by whoever runs the rules, and with a rolled-back transaction in any case.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Table
from sqlalchemy.orm import Session
from sqlalchemy.schema import CreateTableAs


@contextmanager
def candidate_table(session: Session, name: str, query: Any) -> Iterator[Table]:
    """The rows of `query` (its labels become the columns) in a temporary table `name`."""
    table = keep_rows(session, name, query)
    try:
        yield table
    finally:
        drop(session, table)


def keep_rows(session: Session, name: str, query: Any) -> Table:
    """The rows of `query` in a temporary table `name`, until `drop`."""
    build = CreateTableAs(query, name, temporary=True)
    session.execute(build)
    return build.table


def drop(session: Session, table: Table) -> None:
    table.drop(session.connection())
