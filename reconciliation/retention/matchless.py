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

from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.matching.vocabulary import MONEY_EVENTS, STATUS_DENIED
from reconciliation.retention.batches import PruneContext, Removed, by_id
from reconciliation.retention.members import (
    FactCutoffs,
    notifications_that_may_go,
    transfers_that_may_go,
)
from reconciliation.retention.protection import open_alert_refs
from reconciliation.retention.reconciled import remove_items
from reconciliation.retention.transfer_history import by_terminal_at
from reconciliation.store.tables import matches, notifications, transfers

#: Record kinds, as reported by the batches.
DENIED_KIND: Final = "denied_transfers"
MONEYLESS_KIND: Final = "moneyless_notifications"

#: Watermarks: how far each scan has judged (terminal_at in microseconds; notification id).
DENIED_THROUGH: Final = "retention.denied_transfers.through_us"
MONEYLESS_THROUGH: Final = "retention.moneyless_notifications.through_id"


def prune_denied_transfers(ctx: PruneContext, cutoffs: FactCutoffs) -> bool:
    """Remove denied transfers settled before their cutoff; False when a pass kept the lease."""
    if cutoffs.transfer is None:
        return True
    t = transfers

    def judge(session: Session, picked: list[Any]) -> Removed:
        denied = _unnamed(
            session, "transfer_id", [p.id for p in picked if p.status == STATUS_DENIED]
        )
        verdicts = transfers_that_may_go(
            session, denied, cutoffs, open_alert_refs(session), ctx.dry_run
        )
        going = {i: ref for i, ref in verdicts.items() if ref is not None}
        return remove_items(session, ctx, set(), {}, going, set())

    columns = [t.c.id, t.c.terminal_at, t.c.status]
    return by_terminal_at(
        ctx, DENIED_KIND, DENIED_THROUGH, cutoffs.transfer, columns, judge, leased=True
    )


def prune_moneyless_notifications(ctx: PruneContext, cutoffs: FactCutoffs) -> bool:
    """Remove notifications claiming no money stored before their cutoff; False: lease kept."""
    if cutoffs.notification is None:
        return True
    cutoff: datetime = cutoffs.notification
    n = notifications

    def judge(session: Session, rows: list[Any], _through: int) -> Removed:
        moneyless = [r.id for r in rows if r.event_type not in MONEY_EVENTS]
        verdicts = notifications_that_may_go(
            session,
            _unnamed(session, "notification_id", moneyless),
            cutoffs,
            open_alert_refs(session),
            ctx.dry_run,
        )
        going = {i for i, may_go in verdicts.items() if may_go}
        return remove_items(session, ctx, set(), {}, {}, going)

    return by_id(
        ctx,
        MONEYLESS_KIND,
        select(n.c.id, n.c.created_at, n.c.event_type),
        n.c.id,
        lambda _session: lambda row: row.created_at >= cutoff,
        judge,
        through=MONEYLESS_THROUGH,
        leased=True,
    )


def _unnamed(session: Session, column: str, ids: list[int]) -> list[int]:
    """Of these items, those no match row names (a named one is a group's business)."""
    if not ids:
        return []
    column_of = matches.c[column]
    named = {int(i) for i in session.scalars(select(column_of).where(column_of.in_(ids)))}
    return [i for i in ids if i not in named]
