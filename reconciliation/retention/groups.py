"""Match groups: the match rows and the items that belong together, found from a page of rows.

A group is a connected set: a match row joins the items it names (a posting, a transfer, a
notification), and an item joins every row naming it, active or taken apart (`unmatched_at`).
One transfer settles as two legs, each its own row naming the transfer and its notification;
a notification a person unmatched from one posting and matched to another joins both rows.
Removing a group whole is what keeps every match row pointing at items that exist: match rows
have no foreign keys (store.models.matching), so nothing else would say so.

`close_groups` starts from a page of rows and follows the three item indexes of `matches`
(posting_id, transfer_id, notification_id) until no new row turns up: a few index probes per
round, and a group is a handful of rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.store.in_lists import chunks
from reconciliation.store.tables import matches

#: What is read of a match row: its items and its times.
ROW_COLUMNS: Final = (
    matches.c.id,
    matches.c.posting_id,
    matches.c.transfer_id,
    matches.c.notification_id,
    matches.c.matched_at,
    matches.c.unmatched_at,
)

#: Item kind -> its column in `matches`.
ITEM_COLUMNS: Final = {
    "posting": "posting_id",
    "transfer": "transfer_id",
    "notification": "notification_id",
}

Item = tuple[str, int]


@dataclass(slots=True)
class MatchGroup:
    """One connected group: its match rows (by id) and its items (by kind)."""

    rows: dict[int, Any] = field(default_factory=dict)
    items: dict[str, set[int]] = field(
        default_factory=lambda: {kind: set() for kind in ITEM_COLUMNS}
    )

    @property
    def last_change(self) -> datetime:
        """When a row of the group was last written: matched, or taken apart."""
        found: datetime = max(
            max(r.matched_at, r.unmatched_at or r.matched_at) for r in self.rows.values()
        )
        return found


def items_of(row: Any) -> Iterable[Item]:
    for kind, column in ITEM_COLUMNS.items():
        value = getattr(row, column)
        if value is not None:
            yield kind, int(value)


def _rows_naming(session: Session, items: set[Item]) -> list[Any]:
    """Every match row naming one of these items, by the item indexes."""
    found: list[Any] = []
    for kind, column in ITEM_COLUMNS.items():
        ids = sorted(i for k, i in items if k == kind)
        for batch in chunks(ids):
            found += session.execute(select(*ROW_COLUMNS).where(matches.c[column].in_(batch))).all()
    return found


def close_groups(session: Session, start: Sequence[Any]) -> list[MatchGroup]:
    """The groups these rows belong to, each with every row and item it reaches."""
    rows: dict[int, Any] = {r.id: r for r in start}
    known: set[Item] = set()
    frontier = {item for r in start for item in items_of(r)}
    while frontier:
        known |= frontier
        fresh = [r for r in _rows_naming(session, frontier) if r.id not in rows]
        rows.update((r.id, r) for r in fresh)
        frontier = {item for r in fresh for item in items_of(r)} - known
    return _components(rows)


def _components(rows: dict[int, Any]) -> list[MatchGroup]:
    """Union-find over items: rows sharing an item are one group."""
    parent: dict[Item, Item] = {}

    def root(item: Item) -> Item:
        parent.setdefault(item, item)
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for row in rows.values():
        first, *others = list(items_of(row)) or [("row", -row.id)]
        for other in others:
            parent[root(other)] = root(first)
        root(first)
    groups: dict[Item, MatchGroup] = {}
    for row in rows.values():
        first = next(iter(items_of(row)), ("row", -row.id))
        group = groups.setdefault(root(first), MatchGroup())
        group.rows[row.id] = row
        for kind, item_id in items_of(row):
            group.items[kind].add(item_id)
    return list(groups.values())
