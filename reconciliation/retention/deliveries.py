"""Raw deliveries leave the inbox a while after they were processed (default 90 days).

A delivery's row is its exact bytes and headers, about 2.4 KB: the largest growth of the store.
Once processed, what it claimed lives on in its notification (kept for good), and deduplication
(invariant 2) only needs the row while the provider may still retry, which is days, not months.

Never removed: a delivery that is pending or quarantined, one whose payload shape is not
understood, one an open alert names (by row or delivery id), and one whose notification is
still unmatched (backlog, exception, or unseen) or named by an open alert. The notification
that came from a removed delivery keeps everything it said; only its pointer to the inbox row
is cleared, in the same transaction.

Candidates are read by the (state, received_at) index from the oldest, keyset-paged, so a run
reads what it removes plus the few rows it must keep, never the inbox's history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, and_, select, update
from sqlalchemy.orm import Session

from reconciliation.notifications.inbox import PROCESSED
from reconciliation.retention.batches import PruneContext, Removed, by_keyset, take_rows
from reconciliation.retention.protection import still_waiting
from reconciliation.store.tables import deliveries, notifications

#: Record kind, as reported and archived.
KIND: Final = "deliveries"


def prune_deliveries(ctx: PruneContext, cutoff: datetime) -> None:
    """Remove processed deliveries received and processed before `cutoff`, batch by batch."""
    d = deliveries

    def judge(session: Session, picked: list[Any]) -> Removed:
        kept = _kept_for_notification(session, ctx, [r.id for r in picked])
        doomed = [
            r.id
            for r in picked
            if r.id not in kept
            and not ctx.guard.names("delivery", r.id)
            and r.delivery_id not in ctx.guard.delivery_ids
        ]
        if not doomed:
            return {}
        if not ctx.dry_run:
            session.execute(
                update(notifications)
                .where(notifications.c.delivery_pk.in_(doomed))
                .values(delivery_pk=None)
            )
        return {KIND: take_rows(session, d, d.c.id.in_(doomed), ctx.dry_run)}

    pick = select(d.c.id, d.c.received_at, d.c.delivery_id).where(processed_before(cutoff))
    by_keyset(ctx, KIND, lambda _session: pick, d.c.received_at, judge)


def processed_before(cutoff: datetime) -> ColumnElement[bool]:
    """SQL: a processed delivery that some shape read, received and processed before `cutoff`."""
    d = deliveries
    return and_(
        d.c.state == PROCESSED,
        d.c.received_at < cutoff,
        d.c.processed_at < cutoff,
        d.c.shape_problem.is_(None),
    )


def _kept_for_notification(session: Session, ctx: PruneContext, ids: list[int]) -> set[int]:
    """Of these deliveries, those whose notification is still waiting or an alert names."""
    n = notifications
    waiting = still_waiting(session, "notification", n.c.id, n.c.match_status)
    kept: set[int] = set()
    for delivery_pk, notification_id, is_waiting in session.execute(
        select(n.c.delivery_pk, n.c.id, waiting).where(n.c.delivery_pk.in_(ids))
    ):
        if is_waiting or ctx.guard.names("notification", notification_id):
            kept.add(int(delivery_pk))
    return kept
