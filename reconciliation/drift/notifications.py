"""notification_without_posting: the provider said money moved, the ledger shows nothing.

A notification claiming money moved (PAYMENT_RECEIVED, TRANSACTION_COMPLETED) that no posting
matched, once both the event and our receipt of it are older than the notification grace (the
posting poller needs time to see the ledger). One that names a transfer the gateway says did
not complete is a status contradiction instead (that rule reports it; one cause, one alert).
Items a person must decide on ('exception') are reported as ambiguous matches, not here.
Waiting notifications are the backlog's, so the rule reads the backlog, not the history.
Clears when the posting arrives and matches.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import or_, select

from foundation import format_money
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import describe_items
from reconciliation.matching.backlog import in_backlog
from reconciliation.matching.transfer_states import settled
from reconciliation.matching.vocabulary import POSTED_EVENTS
from reconciliation.store.tables import notifications, transfers

KIND: Final = "notification_without_posting"
SEVERITY: Final = "high"


def _amount(ev: dict[str, Any]) -> str:
    """The claimed amount as a person reads it; a notification may carry none."""
    if ev["amountMinor"] is None:
        return "an unstated amount"
    return format_money(int(ev["amountMinor"]), ev["currency"])


class NotificationWithoutPosting(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        cutoff = ctx.ago(ctx.policy.notification_grace_seconds)
        n, t = notifications, transfers
        query = (
            select(n.c.id)
            .select_from(n.outerjoin(t, t.c.transfer_ref == n.c.transfer_ref))
            .where(
                in_backlog("notification", n.c.id),
                n.c.event_type.in_(POSTED_EVENTS),
                n.c.occurred_at <= cutoff,
                n.c.created_at <= cutoff,
                or_(t.c.id.is_(None), settled(t)),
            )
        )
        return [
            self.finding(
                f"{ev['eventType']} {ev['eventId']} claims {_amount(ev)} moved, "
                "but no posting matches it",
                (ev["eventId"],),
                {"notification": ev},
            )
            for ev in describe_items(
                ctx.session, "notification", ctx.session.scalars(query)
            ).values()
        ]
