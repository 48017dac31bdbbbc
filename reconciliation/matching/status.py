"""Match rows written, and the items a person must decide ('exception').

Matched-ness lives in `matches` (an active row names the item); the items themselves are only
rewritten for the rare exception, so a pass over a million items writes its match rows and
nothing else per item.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Final

from sqlalchemy import Table, func, select, update
from sqlalchemy.orm import Session

from reconciliation.matching.outcome import Ambiguity
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import matches, notifications, postings, transfers

#: Item kind -> (its table, its column in matches).
ITEM_TABLES: Final[dict[str, tuple[Table, str]]] = {
    "posting": (postings, "posting_id"),
    "transfer": (transfers, "transfer_id"),
    "notification": (notifications, "notification_id"),
}


def max_match_id(session: Session) -> int:
    return int(session.execute(select(func.coalesce(func.max(matches.c.id), 0))).scalar_one())


def mark_items(session: Session, items: Iterable[tuple[str, int]], status: str) -> None:
    """Set match_status of the given (kind, id) items."""
    by_kind: dict[str, set[int]] = defaultdict(set)
    for kind, item_id in items:
        by_kind[kind].add(item_id)
    for kind, ids in by_kind.items():
        table, _ = ITEM_TABLES[kind]
        values: dict[str, object] = {"match_status": status}
        if "updated_at" in table.c:  # a match decision is not a change of the provider's data
            values["updated_at"] = table.c.updated_at
        for batch in chunks(sorted(ids)):
            session.execute(
                update(table)
                .where(table.c.id.in_(batch))
                .values(values)
                .execution_options(synchronize_session=False)
            )


def mark_exceptions(session: Session, ambiguities: Iterable[Ambiguity]) -> None:
    items: list[tuple[str, int]] = []
    for ambiguity in ambiguities:
        items.append(ambiguity.anchor)
        items.extend(ambiguity.rivals)
    mark_items(session, items, EXCEPTION)


def group_ambiguities(
    rule: str, anchor_kind: str, rival_kind: str, pairs: Iterable[tuple[int, int]]
) -> list[Ambiguity]:
    """(anchor id, rival id) pairs -> one Ambiguity per anchor, rivals sorted."""
    rivals: dict[int, set[int]] = defaultdict(set)
    for anchor_id, rival_id in pairs:
        rivals[anchor_id].add(rival_id)
    return [
        Ambiguity(
            rule=rule,
            anchor=(anchor_kind, anchor_id),
            rivals=tuple((rival_kind, r) for r in sorted(found)),
        )
        for anchor_id, found in sorted(rivals.items())
    ]
