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

from typing import Final

from sqlalchemy import select

from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import ACTIVE_STATES, Finding
from reconciliation.drift.base import DriftContext
from reconciliation.notifications.subscription_check import ACTIVE, KIND_INACTIVE, fingerprint
from reconciliation.store.models import Alert, Subscription

#: Severity by stored status: suspended means the provider gave up on us.
SEVERITY_BY_STATUS: Final = {"SUSPENDED": "critical"}
DEFAULT_SEVERITY: Final = "high"


class SubscriptionInactive:
    kinds = (KIND_INACTIVE,)

    def assess(self, ctx: DriftContext) -> Assessment:
        s = ctx.session
        active = select(Alert).where(Alert.kind == KIND_INACTIVE, Alert.state.in_(ACTIVE_STATES))
        active_alerts = {a.fingerprint: a for a in s.scalars(active)}
        found = []
        for sub in s.scalars(select(Subscription).where(Subscription.status != ACTIVE)):
            fp = fingerprint(KIND_INACTIVE, sub.webhook_id)
            alert = active_alerts.get(fp)
            if alert is not None:
                # The check wrote richer evidence from the API; keep it rather than churn it.
                found.append(Finding.of(alert))
                continue
            found.append(
                Finding(
                    kind=KIND_INACTIVE,
                    severity=SEVERITY_BY_STATUS.get(sub.status, DEFAULT_SEVERITY),
                    subject=(
                        f"webhook {sub.webhook_id} is {sub.status}, not ACTIVE: the provider is "
                        "not delivering to it"
                    ),
                    fingerprint=fp,
                    evidence={
                        "webhook_id": sub.webhook_id,
                        "url": sub.url,
                        "status": sub.status,
                        "failed_deliveries": sub.failed_deliveries,
                        "total_deliveries": sub.total_deliveries,
                    },
                )
            )
        return Assessment(kinds=self.kinds, findings=found)
