"""Write statements that behave the same on SQLite and PostgreSQL.

Re-ingestion is idempotent through unique constraints (postings on journal_ref + line_ref,
transfers on transfer_ref, ...): writing what is already there must be a no-op, not an error
that rolls back the rest of the batch. Both databases say so with the same clause, but
SQLAlchemy builds it from each dialect's own `insert`, so `insert_ignoring_conflicts` picks the
right one. Leases and claims are conditional UPDATEs whose effect is the number of rows they
touched, which `rows_touched` reads without caring which result class the session returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import CursorResult, Result
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def insert_ignoring_conflicts(session: Session, model: Any, unique: Sequence[str]) -> Any:
    """An INSERT into `model` that skips rows conflicting on the `unique` columns."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert(model).on_conflict_do_nothing(index_elements=list(unique))
    if dialect == "sqlite":
        return sqlite.insert(model).on_conflict_do_nothing(index_elements=list(unique))
    raise RuntimeError(f"unsupported database {dialect!r}: recon runs on SQLite or PostgreSQL")


def rows_touched(result: Result[Any]) -> int:
    """Rows an UPDATE or DELETE changed (0 when the driver cannot say).

    Not for INSERT: psycopg reports -1 for the ORM's inserts; say RETURNING and count the rows.
    """
    if isinstance(result, CursorResult):
        return int(result.rowcount or 0)
    return 0


def refusal(exc: BaseException) -> str:
    """Why the store refused a row, in one line: the driver's own first line, without the SQL
    statement or its parameters (which SQLAlchemy's message appends)."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}"[:300]
