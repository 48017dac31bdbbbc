"""The database's own clock, in epoch milliseconds, for marks that several machines compare.

A row's "changed since the last pass" must not depend on which worker wrote it: two machines'
clocks differ, and a read that began on one and was released minutes later carries the time it
began. So such marks take the database's time, when the statement runs, as a plain integer
(one type on both dialects, comparable with a watermark's value).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement


class DatabaseMillis(FunctionElement[int]):
    """Epoch milliseconds by the database's clock, when the statement runs."""

    type = BigInteger()
    inherit_cache = True


@compiles(DatabaseMillis, "postgresql")
def _postgresql(_element: DatabaseMillis, _compiler: Any, **_kw: Any) -> str:
    # clock_timestamp(), not now(): now() is the transaction's start, and a long transaction
    # would stamp its rows earlier than the reads it raced.
    return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"


@compiles(DatabaseMillis, "sqlite")
def _sqlite(_element: DatabaseMillis, _compiler: Any, **_kw: Any) -> str:
    return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
