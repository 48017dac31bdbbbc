"""A terminal transfer's status history is compacted: its first and last change are kept.

Every stage, status or revision change a poll observed is a `transfer_changes` row, written
while the transfer moves. Once it is terminal (and has been for the configured time, default
7 days) the story an auditor needs is where it started and where it ended; the steps between
go (to the archive, when one is asked for). The transfer row itself, what was reconciled, stays.

Never compacted: a transfer still waiting to match or marked for a person to decide, and one
an open alert names. Such a transfer is passed over for good (kept whole), which is the safe
side.

Transfers are read by the terminal_at index from a progress marker (`through` below, kept in
the watermarks table), so each run reads only transfers that became old enough since the last:
the history already compacted is never read again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import and_, func, or_, select, true
from sqlalchemy.orm import Session

from reconciliation.retention.batches import PruneContext, commit_batch, take_rows
from reconciliation.retention.protection import still_waiting
from reconciliation.store import watermarks
from reconciliation.store.tables import transfer_changes as changes
from reconciliation.store.tables import transfers

#: Record kind, as reported and archived.
KIND: Final = "transfer_changes"

#: Watermark: microseconds since the epoch of the terminal_at every earlier transfer is done to.
THROUGH: Final = "retention.transfer_history.through_us"

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def compact_transfer_history(ctx: PruneContext, cutoff: datetime) -> None:
    """Compact the history of transfers that turned terminal before `cutoff`, batch by batch."""
    after: tuple[datetime, int] | None = None
    picked: list[Any] = []

    def work(session: Session) -> dict[str, list[dict[str, Any]]]:
        nonlocal after
        picked[:] = _terminal(session, cutoff, after, ctx.batch_rows)
        if not picked:
            return {}
        after = (picked[-1].terminal_at, picked[-1].id)
        ids = [p.id for p in picked if not ctx.guard.names("transfer", p.id)]
        removed = _compact(session, ids, ctx.dry_run) if ids else []
        if not ctx.dry_run:
            # Inclusive next time: a transfer sharing this instant is looked at again
            # (compacting it twice removes nothing), never skipped.
            watermarks.write(session, THROUGH, _micros(picked[-1].terminal_at), ctx.now)
        return {KIND: removed}

    while True:
        commit_batch(ctx, KIND, work)
        if len(picked) < ctx.batch_rows:
            return


def _terminal(
    session: Session, cutoff: datetime, after: tuple[datetime, int] | None, limit: int
) -> list[Any]:
    t = transfers
    through = _EPOCH + timedelta(microseconds=watermarks.read(session, THROUGH, 0))
    query = (
        select(t.c.id, t.c.terminal_at)
        .where(
            t.c.is_terminal == true(),
            t.c.terminal_at >= through,
            t.c.terminal_at < cutoff,
            ~still_waiting(session, "transfer", t.c.id, t.c.match_status),
        )
        .order_by(t.c.terminal_at, t.c.id)
        .limit(limit)
    )
    if after is not None:
        at, row_id = after
        query = query.where(t.c.terminal_at >= at, or_(t.c.terminal_at > at, and_(t.c.id > row_id)))
    return list(session.execute(query))


def _compact(session: Session, transfer_ids: list[int], dry_run: bool) -> list[dict[str, Any]]:
    c = changes
    ends = session.execute(
        select(func.min(c.c.id), func.max(c.c.id))
        .where(c.c.transfer_id.in_(transfer_ids))
        .group_by(c.c.transfer_id)
    ).all()
    keep = {i for pair in ends for i in pair}
    middle = and_(c.c.transfer_id.in_(transfer_ids), c.c.id.not_in(keep))
    return take_rows(session, c, middle, dry_run)
