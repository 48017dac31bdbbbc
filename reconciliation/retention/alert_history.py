"""Resolved alerts leave only when the operator sets an age for them (kept for good by default).

Alert history is a reconciled fact: what drifted, when, who acknowledged and resolved it. It is
kept unless RECON_RETAIN_RESOLVED_ALERTS_DAYS says otherwise, and then only resolved alerts go,
that long after their resolution. An open or acknowledged alert is never removed.

Candidates are read by the (state, opened_at) index, keyset-paged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import RESOLVED
from reconciliation.retention.batches import PruneContext, commit_batch, take_rows
from reconciliation.store.tables import alerts

#: Record kind, as reported and archived.
KIND: Final = "alerts"


def prune_resolved_alerts(ctx: PruneContext, cutoff: datetime) -> None:
    """Remove alerts resolved before `cutoff`, batch by batch."""
    after: tuple[datetime, int] | None = None
    picked: list[Any] = []

    def work(session: Session) -> dict[str, list[dict[str, Any]]]:
        nonlocal after
        a = alerts
        query = (
            select(a.c.id, a.c.opened_at)
            .where(a.c.state == RESOLVED, a.c.opened_at < cutoff, a.c.resolved_at < cutoff)
            .order_by(a.c.opened_at, a.c.id)
            .limit(ctx.batch_rows)
        )
        if after is not None:
            at, row_id = after
            query = query.where(a.c.opened_at >= at, or_(a.c.opened_at > at, and_(a.c.id > row_id)))
        picked[:] = session.execute(query).all()
        if not picked:
            return {}
        after = (picked[-1].opened_at, picked[-1].id)
        doomed = and_(a.c.id.in_([p.id for p in picked]), a.c.state == RESOLVED)
        return {KIND: take_rows(session, a, doomed, ctx.dry_run)}

    while True:
        commit_batch(ctx, KIND, work)
        if len(picked) < ctx.batch_rows:
            return
