"""The live derived state against the rebuilt one: digests first, then every row that differs.

Digests are cheap (one aggregate per table); only a table whose digests disagree is subtracted
both ways (`EXCEPT`, in the database), and only the first rows of each side are fetched to show,
with the full counts beside them. Rows are the facets' rendered rows
(`reconciliation.rebuild.facets`), so what differs is what a person would call different.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Connection, func, select

from reconciliation.rebuild.digest import StateDigest, state_digest
from reconciliation.rebuild.facets import FACETS, Facet, facet_rows
from reconciliation.rebuild.horizon import Horizon

#: Rows shown per side of each table that differs (the counts are always exact).
SHOWN: Final = 20


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
    connection: Connection,
    facet: Facet,
    sides: tuple[str | None, str | None],
    shown: int,
    horizon: Horizon | None,
) -> tuple[int, list[dict[str, str]]]:
    dialect = connection.dialect
    first, second = sides
    only = facet_rows(facet, first, dialect, horizon).except_(
        facet_rows(facet, second, dialect, horizon)
    )
    rows = only.subquery("only")
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
) -> TableDifference:
    """Subtract one table both ways: live minus rebuilt, rebuilt minus live."""
    live_only, live_sample = _one_way(connection, facet, (None, schema), shown, horizon)
    rebuilt_only, rebuilt_sample = _one_way(connection, facet, (schema, None), shown, horizon)
    return TableDifference(facet.name, live_only, rebuilt_only, live_sample, rebuilt_sample)


def compare(
    connection: Connection,
    schema: str,
    shown: int = SHOWN,
    live: StateDigest | None = None,
    horizon: Horizon | None = None,
) -> Comparison:
    """Digest both states (the live one unless given: `live_digest`), within `horizon` when
    given; list the rows of every table whose digests differ (read from the live tables as they
    are now)."""
    live = live if live is not None else state_digest(connection, None, horizon)
    rebuilt = state_digest(connection, schema, horizon)
    differences = []
    mine, theirs = live.by_name(), rebuilt.by_name()
    for facet in FACETS:
        if mine[facet.name] != theirs[facet.name]:
            # Appended even when neither side has a row the other lacks: then the same rows
            # appear a different number of times (a duplicated match, say), still a difference.
            differences.append(table_difference(connection, facet, schema, shown, horizon))
    return Comparison(live, rebuilt, tuple(differences))
