"""Turning one pass's findings into alert changes: open, refresh, cap, auto-resolve.

A drift rule does not write alerts; it says what it sees now (an `Assessment`). This module
compares that with the store, once for all rules, so the cap per pass and the storm summary
apply to the pass as a whole, and an alert whose condition is gone is resolved in the same
transaction that would have refreshed it.

Reopening: an alert resolved by the pass reopens as soon as its condition is seen again. An
alert a person resolved stays resolved while the condition is seen without a break (they have
dealt with it); if a pass no longer sees it and a later pass does, it is a new occurrence and
reopens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import (
    ACTIVE_STATES,
    AUTO_RESOLVER,
    RESOLVED,
    SEVERITIES,
    AlertChange,
    Finding,
    reopen,
)
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import Alert

#: Kind and fingerprint of the one summary alert that stands for everything a pass held back.
ALERT_STORM: Final = "alert_storm"

#: Fingerprints quoted as a sample in the storm alert's evidence.
STORM_SAMPLE: Final = 20


@dataclass(frozen=True, slots=True)
class Assessment:
    """What one drift rule sees now, for the kinds it owns.

    clears: the rule saw the whole of its condition, so an active alert of its kinds that it no
        longer reports is resolved. Rules that only raise (never clear) set it False.
    undecided: fingerprints the rule could not judge this pass (say, a poller still catching
        up): their alerts are left exactly as they are.
    """

    kinds: tuple[str, ...]
    findings: Sequence[Finding]
    clears: bool = True
    undecided: frozenset[str] = frozenset()


@dataclass(slots=True)
class AlertOutcome:
    """What a pass did to alerts."""

    opened: list[AlertChange] = field(default_factory=list)
    reopened: list[AlertChange] = field(default_factory=list)
    resolved: list[AlertChange] = field(default_factory=list)
    refreshed: int = 0
    suppressed: int = 0
    storm: AlertChange | None = None

    @property
    def changes(self) -> list[tuple[str, AlertChange]]:
        """Every change with its log event name, in the order a reader wants them."""
        events = [("alert.opened", c) for c in self.opened]
        events += [("alert.reopened", c) for c in self.reopened]
        if self.storm is not None:
            events.append(("alert.storm", self.storm))
        events += [("alert.resolved", c) for c in self.resolved]
        return events


def _urgency(item: Finding | AlertChange) -> tuple[int, str, str]:
    return (SEVERITIES.index(item.severity), item.kind, item.fingerprint)


def apply_assessments(
    session: Session,
    assessments: Sequence[Assessment],
    *,
    now: datetime,
    cap: int,
    previous_pass_at: datetime | None,
) -> AlertOutcome:
    """Write the alert changes of one pass: refresh, open (up to `cap`), storm, auto-resolve."""
    outcome = AlertOutcome()
    findings: dict[str, Finding] = {}
    for assessment in assessments:
        for finding in assessment.findings:
            findings.setdefault(finding.fingerprint, finding)

    existing: dict[str, Alert] = {}
    for batch in chunks(findings):
        for stored in session.scalars(select(Alert).where(Alert.fingerprint.in_(batch))):
            existing[stored.fingerprint] = stored

    to_open: list[Finding] = []
    seen_ids: list[int] = []
    for fp, finding in findings.items():
        alert = existing.get(fp)
        if alert is None:
            to_open.append(finding)
            continue
        if alert.state == RESOLVED and _comes_back(alert, previous_pass_at):
            to_open.append(finding)
            continue
        seen_ids.append(alert.id)
        if alert.evidence != finding.evidence or alert.severity != finding.severity:
            finding.refresh(alert)
    for ids in chunks(seen_ids):
        session.execute(update(Alert).where(Alert.id.in_(ids)).values(last_seen_at=now))
    outcome.refreshed = len(seen_ids)

    to_open.sort(key=_urgency)
    admitted, held_back = to_open[:cap], to_open[cap:]
    _open(session, admitted, existing, now, outcome)
    outcome.suppressed = len(held_back)

    storm = _storm_finding(held_back)
    resolvable = [a for a in assessments if a.clears]
    resolvable.append(Assessment(kinds=(ALERT_STORM,), findings=[storm] if storm else []))
    if storm is not None:
        outcome.storm = _raise_storm(session, storm, now)
    _auto_resolve(session, resolvable, now, outcome)
    session.flush()
    return outcome


def _comes_back(alert: Alert, previous_pass_at: datetime | None) -> bool:
    if alert.resolved_by == AUTO_RESOLVER:
        return True
    return previous_pass_at is None or alert.last_seen_at < previous_pass_at


def _open(
    session: Session,
    admitted: list[Finding],
    existing: dict[str, Alert],
    now: datetime,
    outcome: AlertOutcome,
) -> None:
    fresh: list[dict[str, Any]] = []
    for finding in admitted:
        alert = existing.get(finding.fingerprint)
        if alert is not None:
            reopen(alert, now)
            alert.last_seen_at = now
            alert.occurrences += 1
            finding.refresh(alert)
            outcome.reopened.append(AlertChange.of(alert))
            continue
        fresh.append(finding.opened(now))
    if not fresh:
        return
    session.execute(insert(Alert), fresh)
    opened = {f["fingerprint"] for f in fresh}
    for batch in chunks(opened):
        for alert in session.scalars(select(Alert).where(Alert.fingerprint.in_(batch))):
            outcome.opened.append(AlertChange.of(alert))
    outcome.opened.sort(key=_urgency)


def _storm_finding(held_back: list[Finding]) -> Finding | None:
    if not held_back:
        return None
    by_kind = Counter(f.kind for f in held_back)
    return Finding(
        kind=ALERT_STORM,
        severity="high",
        subject=(
            f"{len(held_back)} more alerts held back by the per-pass cap "
            f"({', '.join(f'{k}: {n}' for k, n in sorted(by_kind.items()))}); "
            "they open over the next passes if their conditions persist"
        ),
        fingerprint=ALERT_STORM,
        evidence={
            "held_back": len(held_back),
            "by_kind": dict(sorted(by_kind.items())),
            "sample": [f.fingerprint for f in held_back[:STORM_SAMPLE]],
        },
    )


def _raise_storm(session: Session, storm: Finding, now: datetime) -> AlertChange:
    alert = session.scalars(select(Alert).where(Alert.fingerprint == storm.fingerprint)).first()
    if alert is None:
        alert = Alert(**storm.opened(now))
        session.add(alert)
    else:
        if alert.state == RESOLVED:
            reopen(alert, now)
            alert.occurrences += 1
        alert.last_seen_at = now
        storm.refresh(alert)  # its severity is always the storm's own
    session.flush()
    return AlertChange.of(alert)


def _auto_resolve(
    session: Session, assessments: list[Assessment], now: datetime, outcome: AlertOutcome
) -> None:
    for assessment in assessments:
        keep = {f.fingerprint for f in assessment.findings} | assessment.undecided
        gone = [
            alert
            for alert in session.scalars(
                select(Alert).where(
                    Alert.kind.in_(assessment.kinds), Alert.state.in_(ACTIVE_STATES)
                )
            )
            if alert.fingerprint not in keep
        ]
        for alert in gone:
            alert.state = RESOLVED
            alert.resolved_at = now
            alert.resolved_by = AUTO_RESOLVER
            outcome.resolved.append(AlertChange.of(alert))
