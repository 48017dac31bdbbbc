"""unmatched_by_hand: a person took a match apart and the item has no counterpart now.

Unmatching marks the items left in no active match 'exception': automatic matching leaves them
alone, so the rules that watch the backlog (a posting never notified, a notification without
its posting) no longer see them, and whatever alert they had stays resolved. Without this
rule an item a person declared wrongly matched would be unexplained and silent. One alert per
item, naming the match taken apart, who did it and why; it clears when a person matches the
item again or accepts it without a counterpart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import describe, natural_key
from reconciliation.matching.backlog import active_row
from reconciliation.matching.status import ITEM_TABLES
from reconciliation.store.models import EXCEPTION
from reconciliation.store.tables import matches

KIND: Final = "unmatched_by_hand"
SEVERITY: Final = "medium"


class UnmatchedByHand(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        return findings(ctx.session)


def findings(session: Session, only: Iterable[tuple[str, int]] | None = None) -> list[Finding]:
    """One finding per item a person unmatched that no active match names (of `only`, if given)."""
    latest: dict[tuple[str, int], Any] = {}
    wanted = None if only is None else set(only)
    undone = matches.alias("undone")  # apart from the active-row probe's own `matches`
    for kind, (table, column) in ITEM_TABLES.items():
        query = (
            select(table.c.id, undone.c.id, undone.c.unmatched_by, undone.c.unmatch_reason)
            .join(
                undone,
                and_(undone.c[column] == table.c.id, undone.c.unmatched_at.is_not(None)),
            )
            .where(table.c.match_status == EXCEPTION, ~active_row(kind, table.c.id))
            .order_by(undone.c.unmatched_at, undone.c.id)
        )
        if wanted is not None:
            ids = [i for k, i in wanted if k == kind]
            if not ids:
                continue
            query = query.where(table.c.id.in_(ids))
        for item_id, match_id, by, reason in session.execute(query):
            latest[(kind, int(item_id))] = (int(match_id), by, reason)  # the last one wins
    described = describe(session, latest)
    found = []
    for (kind, item_id), (match_id, by, reason) in sorted(latest.items()):
        item = described.get((kind, item_id))
        if item is None:
            continue
        # Named by the number the console and the CLI show (`recon match --posting 24`); the
        # provider's refs are in the evidence, and the fingerprint keeps them so it survives a
        # rebuild.
        subject = (
            f"{kind} {item_id} has no counterpart since {by} took match {match_id} "
            f"apart ({reason}): match it again or accept it without a counterpart"
        )
        evidence = {
            "itemKind": kind,
            "itemId": item_id,
            kind: item,
            "match": match_id,
            "unmatchedBy": by,
            "reason": reason,
        }
        found.append(UnmatchedByHand().finding(subject, (kind, natural_key(kind, item)), evidence))
    return found
