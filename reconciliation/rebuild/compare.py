"""The live derived state against the rebuilt one: digests first, then every row that differs.

Digests are cheap (one aggregate per table); only a table whose digests disagree is subtracted
both ways (`EXCEPT`, in the database), and only the first rows of each side are fetched to show,
with the full counts beside them. Rows are the facets' rendered rows
(`reconciliation.rebuild.facets`), so what differs is what a person would call different. The
live side's rows are those of the moment its digest describes when the caller can copy them
(`live_copies`: PostgreSQL, `live_digest`), else the live tables as they are now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from sqlalchemy import Connection, Table, func, select

from reconciliation.rebuild.digest import StateDigest, state_digest
from reconciliation.rebuild.facets import FACETS, Facet, Rows, facet_rows
from reconciliation.rebuild.horizon import Horizon

#: Rows shown per side of each table that differs (the counts are always exact).
SHOWN: Final = 20

#: Copies the live rows of the named facets (as of the live digest's moment) and gives back
#: the tables holding them, by facet name.
LiveCopies: TypeAlias = Callable[[Sequence[str]], Mapping[str, Table]]


@dataclass(frozen=True, slots=True)
class TableDifference:
    """One table's rows that only the live store has, and those only the rebuild has."""

    name: str
    live_only: int
    rebuilt_only: int
    live_sample: list[dict[str, str]] = field(default_factory=list)
    rebuilt_sample: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.name,
            "liveOnly": self.live_only,
            "rebuiltOnly": self.rebuilt_only,
            "liveSample": self.live_sample,
            "rebuiltSample": self.rebuilt_sample,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Both digests and the differences (empty when the states are the same)."""

    live: StateDigest
    rebuilt: StateDigest
    differences: tuple[TableDifference, ...]

    @property
    def same(self) -> bool:
        return not self.differences

    def as_dict(self) -> dict[str, Any]:
        return {
            "same": self.same,
            "live": self.live.as_dict(),
            "rebuilt": self.rebuilt.as_dict(),
            "differences": [d.as_dict() for d in self.differences],
        }


def _one_way(
    connection: Connection, first: Rows, second: Rows, shown: int
) -> tuple[int, list[dict[str, str]]]:
    rows = first.except_(second).subquery("only")
    count = int(connection.execute(select(func.count()).select_from(rows)).scalar_one())
    sample = [
        dict(r._mapping) for r in connection.execute(select(rows).order_by(*rows.c).limit(shown))
    ]
    return count, sample


def table_difference(
    connection: Connection,
    facet: Facet,
    schema: str,
    shown: int = SHOWN,
    horizon: Horizon | None = None,
    live_copy: Table | None = None,
) -> TableDifference:
    """Subtract one table both ways: live minus rebuilt, rebuilt minus live. The live rows are
    `live_copy`'s when given, else the live tables' as they are now."""
    dialect = connection.dialect
    live = (
        select(*live_copy.c) if live_copy is not None else facet_rows(facet, None, dialect, horizon)
    )
    rebuilt = facet_rows(facet, schema, dialect, horizon)
    live_only, live_sample = _one_way(connection, live, rebuilt, shown)
    rebuilt_only, rebuilt_sample = _one_way(connection, rebuilt, live, shown)
    return TableDifference(facet.name, live_only, rebuilt_only, live_sample, rebuilt_sample)


def compare(
    connection: Connection,
    schema: str,
    shown: int = SHOWN,
    live: StateDigest | None = None,
    horizon: Horizon | None = None,
    live_copies: LiveCopies | None = None,
) -> Comparison:
    """Digest both states (the live one unless given: `live_digest`), within `horizon` when
    given; list the rows of every table whose digests differ, the live ones from `live_copies`
    when given (else read from the live tables as they are now)."""
    live = live if live is not None else state_digest(connection, None, horizon)
    rebuilt = state_digest(connection, schema, horizon)
    mine, theirs = live.by_name(), rebuilt.by_name()
    # A table appears even when neither side has a row the other lacks: then the same rows
    # appear a different number of times (a duplicated match, say), still a difference.
    differing = [facet for facet in FACETS if mine[facet.name] != theirs[facet.name]]
    copies = live_copies([f.name for f in differing]) if live_copies is not None else {}
    differences = tuple(
        table_difference(connection, facet, schema, shown, horizon, copies.get(facet.name))
        for facet in differing
    )
    return Comparison(live, rebuilt, differences)
