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

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Select, and_, func, select, true
from sqlalchemy.orm import Session

from reconciliation.ledger_audit.ledger import to_micros
from reconciliation.retention.batches import PruneContext, Removed, by_keyset, take_rows
from reconciliation.retention.protection import still_waiting
from reconciliation.store import watermarks
from reconciliation.store.tables import transfer_changes as changes
from reconciliation.store.tables import transfers

#: Record kind, as reported and archived.
KIND: Final = "transfer_changes"

#: Watermark: microseconds since the epoch of the terminal_at every earlier transfer is done to.
THROUGH: Final = "retention.transfer_history.through_us"

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def compact_transfer_history(ctx: PruneContext, cutoff: datetime) -> None:
    """Compact the history of transfers that turned terminal before `cutoff`, batch by batch."""
    t = transfers

    def judge(session: Session, picked: list[Any]) -> Removed:
        ids = [p.id for p in picked if not ctx.guard.names("transfer", p.id)]
        return {KIND: _compact(session, ids, ctx.dry_run) if ids else []}

    def waiting(session: Session) -> list[Any]:
        return [~still_waiting(session, "transfer", t.c.id, t.c.match_status)]

    by_terminal_at(ctx, KIND, THROUGH, cutoff, [t.c.id, t.c.terminal_at], judge, waiting)


def by_terminal_at(
    ctx: PruneContext,
    kind: str,
    through: str,
    cutoff: datetime,
    columns: list[Any],
    judge: Callable[[Session, list[Any]], Removed],
    where: Callable[[Session], list[Any]] = lambda _session: [],
    *,
    leased: bool = False,
) -> bool:
    """`batches.by_keyset` over the transfers that turned terminal before `cutoff`, by the
    terminal_at index from the `through` watermark (microseconds since the epoch), which each
    batch moves on: inclusive next time, so a transfer sharing that instant is looked at again
    (judging it twice removes nothing), never skipped."""
    t = transfers

    def pick(session: Session) -> Select[Any]:
        since = _EPOCH + timedelta(microseconds=watermarks.read(session, through, 0))
        return select(*columns).where(
            t.c.is_terminal == true(),
            t.c.terminal_at >= since,
            t.c.terminal_at < cutoff,
            *where(session),
        )

    def judged(session: Session, picked: list[Any]) -> Removed:
        if not ctx.dry_run:
            watermarks.write(session, through, to_micros(picked[-1].terminal_at), ctx.now)
        return judge(session, picked)

    return by_keyset(ctx, kind, pick, t.c.terminal_at, judged, leased=leased)


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
