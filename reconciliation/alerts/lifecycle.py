"""Alerts: open, deduplicate by fingerprint, acknowledge, resolve.

Any part of recon that notices drift (the reconciler's rules, the subscription check, the inbox
processor) raises it here, so there is one place that decides whether an alert is new, seen
again, or back after being resolved. A person moves an alert open -> acknowledged -> resolved;
a reconciliation pass resolves it by itself when its condition clears (`reconciliation.
alert_pass`). Every change is logged as one structlog line; the outbound webhook reads the
`published_state` outbox (`reconciliation.alerts.sinks`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Final

import structlog
from sqlalchemy import case, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reconciliation.store.models import Alert
from reconciliation.store.types import utcnow

#: Severities, most urgent first.
SEVERITIES: Final = ("critical", "high", "medium", "low")

#: The life cycle of an alert.
OPEN: Final = "open"
ACKNOWLEDGED: Final = "acknowledged"
RESOLVED: Final = "resolved"
STATES: Final = (OPEN, ACKNOWLEDGED, RESOLVED)
#: The states of an alert that still asks for attention.
ACTIVE_STATES: Final = (OPEN, ACKNOWLEDGED)

#: Who resolved an alert whose condition cleared by itself (the pass, not a person).
AUTO_RESOLVER: Final = "recon"

#: Longest fingerprint the store keeps (alerts.fingerprint is VARCHAR(128)).
FINGERPRINT_MAX: Final = 128

#: Longest name of a person (acknowledged_by, resolved_by are VARCHAR(128)).
ACTOR_MAX: Final = 128

log = structlog.get_logger(__name__)


class AlertError(Exception):
    """An alert operation a person asked for cannot be done; the message says why."""


class AlertNotFoundError(AlertError):
    """No alert has the id given."""


def fingerprint(kind: str, *parts: object) -> str:
    """The stable identity of one condition: the kind and the natural keys of what it is about.

    Readable when it fits the column; hashed (keeping the kind in front) when it does not, so
    the same condition always yields the same fingerprint whatever the length of its keys.
    """
    text = ":".join([kind, *(str(p) for p in parts)])
    if len(text) <= FINGERPRINT_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:48]
    return f"{kind}:sha256:{digest}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One condition a drift rule sees now; becomes an alert, or refreshes one."""

    kind: str
    severity: str
    subject: str
    fingerprint: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")

    @classmethod
    def of(cls, alert: Alert) -> Finding:
        """The stored alert as seen again, unchanged: for a rule that keeps what another writer
        raised (with richer evidence) rather than churn it."""
        return cls(alert.kind, alert.severity, alert.subject, alert.fingerprint, alert.evidence)

    def opened(self, now: datetime) -> dict[str, Any]:
        """The columns of a new alert for this finding, first seen `now`."""
        return {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "state": OPEN,
            "opened_at": now,
            "last_seen_at": now,
            "occurrences": 1,
        }

    def refresh(self, alert: Alert) -> None:
        """What the alert says now: this finding's evidence, severity and subject."""
        alert.evidence = self.evidence
        alert.severity = self.severity
        alert.subject = self.subject


@dataclass(frozen=True, slots=True)
class AlertChange:
    """What happened to one alert, for logs, sinks and the pass result."""

    alert_id: int
    kind: str
    severity: str
    subject: str
    fingerprint: str
    state: str

    @classmethod
    def of(cls, alert: Alert) -> AlertChange:
        return cls(
            alert.id, alert.kind, alert.severity, alert.subject, alert.fingerprint, alert.state
        )


def log_change(event: str, change: AlertChange, **extra: Any) -> None:
    """The structlog sink: one line per alert change, with what a person needs to find it.

    At info, not warning: an alert is the finding itself, delivered by the console, the API and
    the alert webhook; its log line is the record of a routine change (a pass opening it, a
    person acknowledging it). At warning it would also land in the answer of every one-shot
    command that changes an alert (`recon alerts ack`, `recon reconcile`), which prints only
    warnings and errors unless asked for more. Serving processes log at info by default.
    """
    log.info(
        event,
        alert_id=change.alert_id,
        kind=change.kind,
        severity=change.severity,
        subject=change.subject,
        fingerprint=change.fingerprint,
        **extra,
    )


def raise_alert(
    session: Session,
    *,
    kind: str,
    severity: str,
    subject: str,
    fingerprint: str,
    evidence: dict[str, Any],
    now: datetime | None = None,
) -> Alert:
    """Open an alert, or refresh the open one with the same fingerprint.

    A resolved alert whose condition comes back is reopened rather than duplicated: its history
    (when it first happened, how often) is what the person on call needs.
    """
    finding = Finding(kind, severity, subject, fingerprint, evidence)  # checks the severity
    now = now or utcnow()
    alert = session.scalars(select(Alert).where(Alert.fingerprint == fingerprint)).one_or_none()
    if alert is None:
        fresh = Alert(**finding.opened(now))
        try:
            # A savepoint: two workers may open the same alert at once (two inbox batches with
            # the same unreadable shape); the loser refreshes the winner's row instead of
            # failing its whole batch.
            with session.begin_nested():
                session.add(fresh)
        except IntegrityError:
            alert = session.scalars(select(Alert).where(Alert.fingerprint == fingerprint)).one()
        else:
            log_change("alert.opened", AlertChange.of(fresh))
            return fresh
    alert.last_seen_at = now
    alert.occurrences += 1
    finding.refresh(alert)
    if alert.state == RESOLVED:
        reopen(alert, now)
        session.flush()
        log_change("alert.reopened", AlertChange.of(alert))
    return alert


def reopen(alert: Alert, now: datetime) -> None:
    """Back to open: the condition returned after it had been resolved."""
    alert.state = OPEN
    alert.opened_at = now
    alert.resolved_at = None
    alert.resolved_by = None
    alert.acknowledged_at = None
    alert.acknowledged_by = None


def _checked_actor(by: str) -> str:
    who = by.strip()
    if not who:
        raise AlertError("say who you are (--by / 'by'): the change is recorded with a name")
    if len(who) > ACTOR_MAX:
        raise AlertError(f"'by' is {len(who)} characters; at most {ACTOR_MAX} are kept")
    return who


def get_alert(session: Session, alert_id: int) -> Alert:
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise AlertNotFoundError(f"no alert has id {alert_id}: list them with `recon alerts list`")
    return alert


def acknowledge_alert(
    session: Session, alert_id: int, *, by: str, note: str | None = None
) -> Alert:
    """A person has seen it and owns it; it stays until resolved (by them or by the pass).

    Acknowledging twice is harmless and keeps the first acknowledgement.
    """
    who = _checked_actor(by)
    alert = get_alert(session, alert_id)
    if alert.state == RESOLVED:
        raise AlertError(
            f"alert {alert_id} is already resolved (by {alert.resolved_by}); nothing to acknowledge"
        )
    if alert.state == OPEN:
        _record(session, alert, ACKNOWLEDGED, who, note)
    return alert


def resolve_alert(session: Session, alert_id: int, *, by: str, note: str | None = None) -> Alert:
    """A person closes it. It stays closed while the same condition persists; if the condition
    clears and later comes back, the next pass reopens it. Resolving twice is harmless.
    """
    who = _checked_actor(by)
    alert = get_alert(session, alert_id)
    if alert.state != RESOLVED:
        _record(session, alert, RESOLVED, who, note)
    return alert


def _record(session: Session, alert: Alert, state: str, who: str, note: str | None) -> None:
    """A person moved the alert to `state`: when, who (`<state>_at`, `<state>_by`), their note."""
    alert.state = state
    setattr(alert, f"{state}_at", utcnow())
    setattr(alert, f"{state}_by", who)
    if note:
        alert.note = note
    session.flush()
    log_change(f"alert.{state}", AlertChange.of(alert), by=who)


def list_alerts(
    session: Session,
    *,
    state: str | None = None,
    kind: str | None = None,
    limit: int = 100,
) -> list[Alert]:
    """Alerts, most urgent and newest first; `state` 'active' means open or acknowledged."""
    query = select(Alert)
    if state == "active":
        query = query.where(Alert.state.in_(ACTIVE_STATES))
    elif state is not None:
        if state not in STATES:
            raise AlertError(f"state {state!r} is not one of {(*STATES, 'active')}")
        query = query.where(Alert.state == state)
    if kind is not None:
        query = query.where(Alert.kind == kind)
    urgency = case({s: i for i, s in enumerate(SEVERITIES)}, value=Alert.severity, else_=9)
    query = query.order_by(urgency, Alert.opened_at.desc(), Alert.id.desc()).limit(limit)
    return list(session.scalars(query))


def alert_as_dict(alert: Alert) -> dict[str, Any]:
    """The wire and JSON shape of an alert (API, CLI --json, webhook)."""

    def when(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "id": alert.id,
        "kind": alert.kind,
        "severity": alert.severity,
        "state": alert.state,
        "subject": alert.subject,
        "fingerprint": alert.fingerprint,
        "evidence": alert.evidence,
        "openedAt": when(alert.opened_at),
        "lastSeenAt": when(alert.last_seen_at),
        "occurrences": alert.occurrences,
        "acknowledgedAt": when(alert.acknowledged_at),
        "acknowledgedBy": alert.acknowledged_by,
        "resolvedAt": when(alert.resolved_at),
        "resolvedBy": alert.resolved_by,
        "note": alert.note,
    }
