"""An order-independent digest of the derived state, computed in SQL, one line per table.

Each row of a facet (`reconciliation.rebuild.facets`) is hashed (MD5 of its rendered text) and
the hashes are summed: a sum does not care about row order, so two stores holding the same rows
in any order, under any ids the database chose, agree; a row added, removed or changed moves
the sum. Two 32-bit halves of the hash are summed separately (64 bits together) because SQLite
sums integers in 64 bits and would overflow on one 64-bit hash per row over a million rows.

PostgreSQL computes MD5 itself; SQLite has no MD5, so the same function is registered on the
connection (it is still evaluated inside the database's aggregate, row by row, streaming).
Renderings are identical on both databases, so a SQLite and a PostgreSQL deployment holding the
same state print the same digest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import BigInteger, ColumnElement, Connection, cast, func, literal, select
from sqlalchemy.dialects.postgresql import BIT

from reconciliation.rebuild.facets import FACETS, Facet, facet_rows, joined
from reconciliation.rebuild.horizon import Horizon

#: Name of the hashing function registered on SQLite connections.
SQLITE_HASH: Final = "recon_row_hash"
#: One half of the digest is 32 bits: 8 hex digits.
HALF: Final = 2**32


def _sqlite_row_hash(text: str | None, part: int) -> int:
    """32 bits of MD5(text): part 0 the first, part 1 the second (as PostgreSQL computes)."""
    digest = hashlib.md5((text or "").encode(), usedforsecurity=False).hexdigest()
    return int(digest[8 * part : 8 * part + 8], 16)


def register_sqlite_hash(connection: Connection) -> None:
    """Make `recon_row_hash` callable on this SQLite connection (idempotent)."""
    raw: Any = connection.connection.driver_connection
    raw.create_function(SQLITE_HASH, 2, _sqlite_row_hash, deterministic=True)


def _half(text: ColumnElement[str], part: int, dialect: str) -> ColumnElement[Any]:
    if dialect == "postgresql":
        hex_part = func.substr(func.md5(text), 8 * part + 1, 8)
        return cast(cast(literal("x").concat(hex_part), BIT(32)), BigInteger)
    return getattr(func, SQLITE_HASH)(text, part)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class FacetDigest:
    """One table's rows: how many, and the two sums of their hashes."""

    name: str
    rows: int
    first: int
    second: int

    @property
    def text(self) -> str:
        """`rows:hash` (16 hex digits): what the commands print."""
        return f"{self.rows}:{self.first % HALF:08x}{self.second % HALF:08x}"


@dataclass(frozen=True, slots=True)
class StateDigest:
    """Every facet's digest, and one short digest over all of them."""

    facets: tuple[FacetDigest, ...]

    @property
    def overall(self) -> str:
        """16 hex digits over every facet: equal states, equal digests."""
        lines = "\n".join(f"{f.name}={f.text}" for f in self.facets)
        return hashlib.sha256(lines.encode()).hexdigest()[:16]

    def by_name(self) -> dict[str, str]:
        """Facet name -> `rows:hash`."""
        return {f.name: f.text for f in self.facets}

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe: the overall digest and one entry per table."""
        return {"digest": self.overall, "tables": self.by_name()}


def facet_digest(
    connection: Connection, facet: Facet, schema: str | None, horizon: Horizon | None = None
) -> FacetDigest:
    """Count and hash one facet's rows in `schema` (None: the live store), in one query."""
    dialect = connection.dialect
    if dialect.name == "sqlite":
        register_sqlite_hash(connection)
    rows = facet_rows(facet, schema, dialect, horizon).subquery("facet")
    text = joined(list(rows.c))
    query = select(
        func.count(),
        func.coalesce(func.sum(_half(text, 0, dialect.name)), 0),
        func.coalesce(func.sum(_half(text, 1, dialect.name)), 0),
    ).select_from(rows)
    count, first, second = connection.execute(query).one()
    return FacetDigest(facet.name, int(count), int(first), int(second))


def state_digest(
    connection: Connection, schema: str | None = None, horizon: Horizon | None = None
) -> StateDigest:
    """The digest of the derived state in `schema` (None: the live store), within `horizon`
    (`reconciliation.rebuild.horizon`) when given."""
    return StateDigest(tuple(facet_digest(connection, f, schema, horizon) for f in FACETS))
