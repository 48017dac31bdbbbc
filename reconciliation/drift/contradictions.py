"""status_contradiction: the notification and the gateway tell different stories.

- a notification says the money moved (TRANSACTION_COMPLETED, PAYMENT_RECEIVED) while the
  gateway says the transfer was denied or failed: at once;
- it says the money moved while the gateway still says awaiting_finality: after the
  notification grace (our status poller may simply not have asked yet);
- a TRANSACTION_FAILED for a transfer the gateway says completed: at once.

Incremental: a pair can only start contradicting when its notification is new or waiting, or
its transfer is still moving. So a pass reads the waiting notifications (backlog), those whose
transfer is not terminal, the pairs its own matching flagged (matching computes the flag in the
join that finds them), rows no drift phase has checked yet, and the pairs its open alerts name
(to see whether they cleared); the disagreement itself is a SQL filter. Clears when the
gateway's status comes to agree.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, Table, and_, false, or_, select

from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule, named_by_active_alerts
from reconciliation.drift.evidence import NOTIFICATION_FIELDS, TRANSFER_FIELDS, split
from reconciliation.matching.backlog import in_backlog
from reconciliation.matching.transfer_states import (
    TransferState,
    ended_unmoved,
    settled,
    still_moving,
)
from reconciliation.matching.vocabulary import FAILED_EVENTS, MONEY_EVENTS, POSTED_EVENTS
from reconciliation.store.in_lists import chunks
from reconciliation.store.tables import matches, notifications, transfers

KIND: Final = "status_contradiction"
SEVERITY: Final = "critical"
#: A notification and its transfer as evidence, when recon heard of it, the transfer's state.
Pair = tuple[dict[str, Any], dict[str, Any], datetime, TransferState]


def contradiction(
    event_type: str,
    transfer: TransferState,
    heard_at: datetime,
    cutoff: datetime,
) -> str | None:
    """Why this notification and this transfer status disagree, or None when they agree.

    Decided from isTerminal/isSuccessful only; the status is named as the gateway names it.
    """
    transfer_status = transfer.status
    if event_type in POSTED_EVENTS:
        if transfer.ended_unmoved:
            return f"the notification says the money moved; the gateway says {transfer_status}"
        if transfer.still_moving and heard_at <= cutoff:
            return (
                "the notification says the money moved; the gateway still says "
                f"{transfer_status} after the grace period"
            )
    if event_type in FAILED_EVENTS and transfer.settled:
        return f"the notification says the transfer failed; the gateway says {transfer_status}"
    return None


def disagreeing(n: Table, t: Table) -> ColumnElement[bool]:
    """SQL prefilter: pairs that may contradict (`contradiction` decides, with the grace)."""
    return or_(
        and_(n.c.event_type.in_(POSTED_EVENTS), or_(ended_unmoved(t), still_moving(t))),
        and_(n.c.event_type.in_(FAILED_EVENTS), settled(t)),
    )


class StatusContradiction(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        cutoff = ctx.ago(ctx.policy.notification_grace_seconds)
        found = []
        for note, transfer, heard_at, state in self._pairs(ctx):
            why = contradiction(note["eventType"], state, heard_at, cutoff)
            if why is not None:
                subject = f"transfer {transfer['transferRef']}: {why}"
                evidence = {"notification": note, "transfer": transfer, "why": why}
                found.append(self.finding(subject, (note["eventId"],), evidence))
        return found

    def _pairs(self, ctx: DriftContext) -> list[Pair]:
        """Disagreeing (notification, transfer) pairs among those that can have changed."""
        n, t, m = notifications, transfers, matches
        moving = transfers.alias("moving")  # driven from the few transfers still in flight
        base = (
            select(
                *NOTIFICATION_FIELDS.values(),
                n.c.occurred_at,
                n.c.created_at,
                *TRANSFER_FIELDS.values(),
                t.c.is_terminal,
                t.c.is_successful,
            )
            .select_from(n.join(t, t.c.transfer_ref == n.c.transfer_ref))
            .where(n.c.event_type.in_(MONEY_EVENTS), disagreeing(n, t))
        )
        unchecked = select(m.c.notification_id).where(
            m.c.id > ctx.matches_checked, m.c.id <= ctx.matches_top
        )
        (named,) = named_by_active_alerts(ctx.session, self.kinds, "notification")
        scopes = [
            in_backlog("notification", n.c.id),
            n.c.transfer_ref.in_(
                select(moving.c.transfer_ref).where(moving.c.is_terminal == false())
            ),
            n.c.id.in_(unchecked),
            *(n.c.id.in_(batch) for batch in chunks(sorted(ctx.matched.status_suspects | named))),
        ]
        pairs: dict[int, Pair] = {}
        for scope in scopes:
            for row in ctx.session.execute(base.where(scope)):
                note, (occurred, created, *rest) = split(NOTIFICATION_FIELDS, row)
                transfer, (terminal, successful) = split(TRANSFER_FIELDS, rest)
                state = TransferState(transfer["status"], bool(terminal), successful)
                pairs[note["notificationId"]] = (note, transfer, max(occurred, created), state)
        return list(pairs.values())
