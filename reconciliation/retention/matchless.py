"""Reconciled facts that no match row names: denied transfers, notifications that carry no money.

Matching settles two kinds of item on their own (reconciliation.matching.transfers and
.vocabulary): a transfer the gateway denied moved nothing and needs no counterpart, and a
notification that claims no money (ACCOUNT_CREATED, KYC_VERIFIED) is never matched. Neither
waits in the backlog, so under RECON_RETAIN_TRANSFERS_DAYS / _NOTIFICATIONS_DAYS they leave
on the same conditions as a group's items (members.py), with no match row to go with them.

Each is read from a progress marker in the watermarks table (denied transfers by the
terminal_at index, notifications by id), so a run reads only what became old enough since the
last one. One that must stay (an open alert names it, its delivery is kept, or it has a match
row after all) is passed over for good: kept whole, the safe side.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import or_, select, true
from sqlalchemy.orm import Session

from reconciliation.matching.vocabulary import MONEY_EVENTS, STATUS_DENIED
from reconciliation.retention.batches import PruneContext, commit_batch
from reconciliation.retention.members import (
    FactCutoffs,
    notifications_that_may_go,
    transfers_that_may_go,
)
from reconciliation.retention.protection import open_alert_refs
from reconciliation.retention.reconciled import remove_items
from reconciliation.store import watermarks
from reconciliation.store.tables import matches, notifications, transfers

#: Record kinds, as reported by the batches.
DENIED_KIND: Final = "denied_transfers"
MONEYLESS_KIND: Final = "moneyless_notifications"

#: Watermarks: how far each scan has judged (terminal_at in microseconds; notification id).
DENIED_THROUGH: Final = "retention.denied_transfers.through_us"
MONEYLESS_THROUGH: Final = "retention.moneyless_notifications.through_id"

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def prune_denied_transfers(ctx: PruneContext, cutoffs: FactCutoffs) -> bool:
    """Remove denied transfers settled before their cutoff; False when a pass kept the lease."""
    if cutoffs.transfer is None:
        return True
    cutoff: datetime = cutoffs.transfer
    after: tuple[datetime, int] | None = None
    picked: list[Any] = []

    def work(session: Session) -> dict[str, list[dict[str, Any]]]:
        nonlocal after
        t = transfers
        through = _EPOCH + timedelta(microseconds=watermarks.read(session, DENIED_THROUGH, 0))
        query = (
            select(t.c.id, t.c.terminal_at, t.c.status)
            .where(t.c.is_terminal == true(), t.c.terminal_at >= through, t.c.terminal_at < cutoff)
            .order_by(t.c.terminal_at, t.c.id)
            .limit(ctx.batch_rows)
        )
        if after is not None:
            at, row_id = after
            query = query.where(t.c.terminal_at >= at, or_(t.c.terminal_at > at, t.c.id > row_id))
        picked[:] = session.execute(query).all()
        if not picked:
            return {}
        after = (picked[-1].terminal_at, picked[-1].id)
        denied = [p.id for p in picked if p.status == STATUS_DENIED]
        named = _named_by_rows(session, "transfer_id", denied)
        verdicts = transfers_that_may_go(
            session,
            [i for i in denied if i not in named],
            cutoffs,
            open_alert_refs(session),
            ctx.dry_run,
        )
        going = {i: ref for i, ref in verdicts.items() if ref is not None}
        if not ctx.dry_run:
            # Inclusive next time: a transfer sharing this instant is looked at again.
            watermarks.write(session, DENIED_THROUGH, _micros(after[0]), ctx.now)
        return remove_items(session, ctx, set(), {}, going, set())

    while True:
        with ctx.hold_pass() as held:
            if not held:
                return False
            commit_batch(ctx, DENIED_KIND, work)
        if len(picked) < ctx.batch_rows:
            return True


def prune_moneyless_notifications(ctx: PruneContext, cutoffs: FactCutoffs) -> bool:
    """Remove notifications claiming no money stored before their cutoff; False: lease kept."""
    if cutoffs.notification is None:
        return True
    cutoff: datetime = cutoffs.notification
    with ctx.factory() as session:
        after = watermarks.read(session, MONEYLESS_THROUGH, 0)
    done = False

    def work(session: Session) -> dict[str, list[dict[str, Any]]]:
        nonlocal after, done
        n = notifications
        rows = session.execute(
            select(n.c.id, n.c.created_at, n.c.event_type)
            .where(n.c.id > after)
            .order_by(n.c.id)
            .limit(ctx.batch_rows)
        ).all()
        done = len(rows) < ctx.batch_rows
        judged, moneyless = after, []
        for row in rows:
            if row.created_at >= cutoff:
                done = True
                break
            judged = row.id
            if row.event_type not in MONEY_EVENTS:
                moneyless.append(row.id)
        named = _named_by_rows(session, "notification_id", moneyless)
        verdicts = notifications_that_may_go(
            session,
            [i for i in moneyless if i not in named],
            cutoffs,
            open_alert_refs(session),
            ctx.dry_run,
        )
        if judged > after and not ctx.dry_run:
            watermarks.write(session, MONEYLESS_THROUGH, judged, ctx.now)
        after = judged
        going = {i for i, may_go in verdicts.items() if may_go}
        return remove_items(session, ctx, set(), {}, {}, going)

    while not done:
        with ctx.hold_pass() as held:
            if not held:
                return False
            commit_batch(ctx, MONEYLESS_KIND, work)
    return True


def _named_by_rows(session: Session, column: str, ids: list[int]) -> set[int]:
    """Of these items, those a match row names (a group's business, not this scan's)."""
    if not ids:
        return set()
    column_of = matches.c[column]
    return {int(i) for i in session.scalars(select(column_of).where(column_of.in_(ids)))}
