"""Is our webhook still being delivered? Compare the company API's view with what we stored.

The provider suspends a webhook after a run of failed deliveries (docs/decisions.md) and then
sends nothing: silence that looks exactly like a quiet day. So each check reads our webhooks at
the company API and raises an alert when one is not ACTIVE, is gone, or its failedDeliveries
counter rose since the last check; the stored status and counters are then refreshed
(reconciliation.notifications.subscriptions.record_webhook), so the next check compares with this one.

Alerts are deduplicated by fingerprint (one per webhook and condition) and resolve themselves
when a later check finds the condition gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from foundation import moment
from reconciliation.alerts.lifecycle import AUTO_RESOLVER, RESOLVED, raise_alert, resolve_alert
from reconciliation.alerts.lifecycle import fingerprint as alert_fingerprint
from reconciliation.notifications.subscriptions import list_subscriptions, record_webhook
from reconciliation.store.models import Alert, Subscription
from upstream import Webhook

#: The only status in which the provider delivers.
ACTIVE: Final = "ACTIVE"

#: Alert kinds raised here.
KIND_INACTIVE: Final = "subscription_inactive"
KIND_MISSING: Final = "subscription_missing"
KIND_FAILURES: Final = "subscription_failures_rising"


@dataclass(slots=True)
class CheckOutcome:
    """Fingerprints raised and resolved by one check."""

    raised: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    checked: int = 0


def fingerprint(kind: str, webhook_id: str) -> str:
    """One alert per webhook and condition."""
    return alert_fingerprint(kind, webhook_id)


def check_subscriptions(session: Session, remote: Sequence[Webhook], now: datetime) -> CheckOutcome:
    """Compare every stored subscription with the listing, alert, and store the new counters."""
    outcome = CheckOutcome()
    listed = {w.webhook_id: w for w in remote}
    for stored in list_subscriptions(session):
        outcome.checked += 1
        webhook = listed.get(stored.webhook_id)
        if stored.retired_at is not None:
            # Replaced by a rotation: its failures and its absence are expected now.
            for kind in (KIND_MISSING, KIND_INACTIVE, KIND_FAILURES):
                _settle(session, fingerprint(kind, stored.webhook_id), now, outcome)
            if webhook is not None:
                record_webhook(session, webhook, registered_by_recon=stored.registered_by_recon)
            continue
        if webhook is None:
            _alert_missing(session, stored, outcome)
            continue
        _settle(session, fingerprint(KIND_MISSING, stored.webhook_id), now, outcome)
        _check_status(session, stored, webhook, now, outcome)
        _check_failures(session, stored, webhook, now, outcome)
        record_webhook(session, webhook, registered_by_recon=stored.registered_by_recon)
    return outcome


def _alert_missing(session: Session, stored: Subscription, outcome: CheckOutcome) -> None:
    fp = fingerprint(KIND_MISSING, stored.webhook_id)
    raise_alert(
        session,
        kind=KIND_MISSING,
        severity="critical",
        subject=(
            f"webhook {stored.webhook_id} ({stored.url}) is no longer listed by the company API: "
            "no deliveries will arrive; register it again (recon webhook register)"
        ),
        fingerprint=fp,
        evidence={"webhook_id": stored.webhook_id, "url": stored.url, "last_status": stored.status},
    )
    outcome.raised.append(fp)


def _check_status(
    session: Session, stored: Subscription, webhook: Webhook, now: datetime, outcome: CheckOutcome
) -> None:
    fp = fingerprint(KIND_INACTIVE, webhook.webhook_id)
    if webhook.status == ACTIVE:
        _settle(session, fp, now, outcome)
        return
    raise_alert(
        session,
        kind=KIND_INACTIVE,
        severity="critical" if webhook.status == "SUSPENDED" else "high",
        subject=(
            f"webhook {webhook.webhook_id} is {webhook.status}, not ACTIVE: the provider is not "
            "delivering to it; fix the receiver's reachability, then re-activate or re-register"
        ),
        fingerprint=fp,
        evidence={
            "webhook_id": webhook.webhook_id,
            "url": webhook.url,
            "status": webhook.status,
            "previous_status": stored.status,
            "failed_deliveries": webhook.failed_deliveries,
            "total_deliveries": webhook.total_deliveries,
        },
    )
    outcome.raised.append(fp)


def _check_failures(
    session: Session, stored: Subscription, webhook: Webhook, now: datetime, outcome: CheckOutcome
) -> None:
    fp = fingerprint(KIND_FAILURES, webhook.webhook_id)
    before = stored.failed_deliveries or 0
    after = webhook.failed_deliveries or 0
    if after <= before:
        _settle(session, fp, now, outcome)
        return
    raise_alert(
        session,
        kind=KIND_FAILURES,
        severity="high",
        subject=(
            f"webhook {webhook.webhook_id}: failed deliveries rose from {before} to {after} since "
            "the last check; the provider could not reach the receiver (check the web process "
            "and RECON_PUBLIC_URL)"
        ),
        fingerprint=fp,
        evidence={
            "webhook_id": webhook.webhook_id,
            "failed_before": before,
            "failed_now": after,
            "total_deliveries": webhook.total_deliveries,
            "successful_deliveries": webhook.successful_deliveries,
            "checked_before": stored.checked_at.isoformat() if stored.checked_at else None,
        },
    )
    outcome.raised.append(fp)


def _settle(session: Session, fp: str, now: datetime, outcome: CheckOutcome) -> None:
    """Resolve an open or acknowledged alert whose condition is gone."""
    alert = session.scalars(
        select(Alert).where(Alert.fingerprint == fp, Alert.state != RESOLVED)
    ).one_or_none()
    if alert is not None:
        resolve_alert(session, alert.id, by=AUTO_RESOLVER, note=f"cleared at {moment(now)}")
        outcome.resolved.append(fp)
