"""Resolved alerts leave only when the operator sets an age for them (kept for good by default).

Alert history is a reconciled fact: what drifted, when, who acknowledged and resolved it. It is
kept unless RECON_RETAIN_RESOLVED_ALERTS_DAYS says otherwise, and then only resolved alerts go,
that long after their resolution. An open or acknowledged alert is never removed.

Candidates are read by the (state, opened_at) index, keyset-paged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import RESOLVED
from reconciliation.retention.batches import PruneContext, Removed, by_keyset, take_rows
from reconciliation.store.tables import alerts

#: Record kind, as reported and archived.
KIND: Final = "alerts"


def prune_resolved_alerts(ctx: PruneContext, cutoff: datetime) -> None:
    """Remove alerts resolved before `cutoff`, batch by batch."""
    a = alerts

    def judge(session: Session, picked: list[Any]) -> Removed:
        doomed = and_(a.c.id.in_([p.id for p in picked]), a.c.state == RESOLVED)
        return {KIND: take_rows(session, a, doomed, ctx.dry_run)}

    pick = select(a.c.id, a.c.opened_at).where(
        a.c.state == RESOLVED, a.c.opened_at < cutoff, a.c.resolved_at < cutoff
    )
    by_keyset(ctx, KIND, lambda _session: pick, a.c.opened_at, judge)
