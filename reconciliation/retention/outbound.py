"""Closed Idempotency-Key records leave a while after their request completed (default 7 days).

A key is what makes a retried write safe (invariant 6), so an open key (pending or sent) is
never removed, however old: its request may still be retried and must reuse it. A closed key
(done or failed) is never handed out again (reconciliation.transfers.outbound only reuses open
ones); it is kept as long as the provider might still answer a replay under it. The provider
does not say how long that is, so the window is a setting with a generous default.

Candidates are read by the completed_at index, oldest first, keyset-paged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, and_, select
from sqlalchemy.orm import Session

from reconciliation.retention.batches import PruneContext, Removed, by_keyset, take_rows
from reconciliation.store.tables import outbound_requests as requests

#: Record kind, as reported and archived.
KIND: Final = "outbound_requests"

#: States of a key that will never be used again.
CLOSED_STATES: Final = ("done", "failed")


def closed_before(cutoff: datetime) -> ColumnElement[bool]:
    """SQL: a key record that will never be used again, completed before `cutoff`."""
    return and_(requests.c.completed_at < cutoff, requests.c.state.in_(CLOSED_STATES))


def prune_outbound_requests(ctx: PruneContext, cutoff: datetime) -> None:
    """Remove closed key records completed before `cutoff`, batch by batch."""
    r = requests

    def judge(session: Session, picked: list[Any]) -> Removed:
        return {KIND: take_rows(session, r, r.c.id.in_([p.id for p in picked]), ctx.dry_run)}

    pick = select(r.c.id, r.c.completed_at).where(closed_before(cutoff))
    by_keyset(ctx, KIND, lambda _session: pick, r.c.completed_at, judge)
