"""Subscription health, as the store last saw it: the pass keeps the check's alerts honest.

The subscription check (reconciliation.notifications.subscription_check, run by a worker) reads our webhooks
at the company API, raises `subscription_inactive`, `subscription_missing` and
`subscription_failures_rising`, and resolves them on its next run. When that check cannot run
(the company API is down, the worker is stopped) its alerts would stay as they were; so each
pass re-reads the stored status: a webhook stored as not ACTIVE keeps (or gets) its
`subscription_inactive` alert, and one stored ACTIVE again has it resolved. The other two kinds
need the API's counters between checks, so the check alone owns them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from sqlalchemy import select

from reconciliation.alerts.lifecycle import ACTIVE_STATES, Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.notifications.subscription_check import ACTIVE, KIND_INACTIVE, fingerprint
from reconciliation.store.models import Alert, Subscription

#: Severity by stored status: suspended means the provider gave up on us.
SEVERITY_BY_STATUS: Final = {"SUSPENDED": "critical"}
DEFAULT_SEVERITY: Final = "high"


class SubscriptionInactive(OneKindRule, kind=KIND_INACTIVE, severity=DEFAULT_SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        s = ctx.session
        active = select(Alert).where(Alert.kind == KIND_INACTIVE, Alert.state.in_(ACTIVE_STATES))
        active_alerts = {a.fingerprint: a for a in s.scalars(active)}
        found = []
        for sub in s.scalars(select(Subscription).where(Subscription.status != ACTIVE)):
            alert = active_alerts.get(fingerprint(KIND_INACTIVE, sub.webhook_id))
            if alert is not None:
                # The check wrote richer evidence from the API; keep it rather than churn it.
                found.append(Finding.of(alert))
                continue
            finding = self.finding(
                f"webhook {sub.webhook_id} is {sub.status}, not ACTIVE: the provider is "
                "not delivering to it",
                (sub.webhook_id,),
                {
                    "webhook_id": sub.webhook_id,
                    "url": sub.url,
                    "status": sub.status,
                    "failed_deliveries": sub.failed_deliveries,
                    "total_deliveries": sub.total_deliveries,
                },
            )
            found.append(
                replace(finding, severity=SEVERITY_BY_STATUS.get(sub.status, self.severity))
            )
        return found
