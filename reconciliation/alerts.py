"""Alerts: open, deduplicate by fingerprint, acknowledge, resolve.

Any part of recon that notices drift (the reconciler's rules, the subscription check, the inbox
processor) raises it here, so there is one place that decides whether an alert is new, seen
again, or back after being resolved.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.store.models import Alert
from reconciliation.store.types import utcnow

#: Severities, most urgent first.
SEVERITIES: Final = ("critical", "high", "medium", "low")


def raise_alert(
    session: Session,
    *,
    kind: str,
    severity: str,
    subject: str,
    fingerprint: str,
    evidence: dict[str, Any],
) -> Alert:
    """Open an alert, or refresh the open one with the same fingerprint.

    A resolved alert whose condition comes back is reopened rather than duplicated: its history
    (when it first happened, how often) is what the person on call needs.
    """
    if severity not in SEVERITIES:
        raise ValueError(f"severity {severity!r} is not one of {SEVERITIES}")
    now = utcnow()
    alert = session.scalars(select(Alert).where(Alert.fingerprint == fingerprint)).one_or_none()
    if alert is None:
        alert = Alert(
            kind=kind,
            severity=severity,
            subject=subject,
            fingerprint=fingerprint,
            evidence=evidence,
            state="open",
            opened_at=now,
            last_seen_at=now,
            occurrences=1,
        )
        session.add(alert)
        session.flush()
        return alert
    alert.last_seen_at = now
    alert.occurrences += 1
    alert.evidence = evidence
    alert.severity = severity
    alert.subject = subject
    if alert.state == "resolved":
        alert.state = "open"
        alert.opened_at = now
        alert.resolved_at = None
        alert.resolved_by = None
    return alert
