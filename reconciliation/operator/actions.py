"""What a person may change, each change with its audit row in the same transaction.

The operator console and the CLI call these: acknowledge or resolve an alert, match by hand,
accept one item without a counterpart, or unmatch (through `reconciliation.matching.manual`;
`recon match`, `recon accept` and `recon unmatch` call the same functions), put deliveries back
in the inbox for replay, and record sign-in and sign-out.
Each function works in the caller's session; the caller commits, so the change and its audit
row land together or not at all. Errors of the services below are re-raised as one
`ActionRefusedError` carrying their message, which already says what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sqlalchemy.orm import Session

from reconciliation.alerts.changes import AlertOutcome, Assessment, apply_assessments
from reconciliation.alerts.lifecycle import AlertError, acknowledge_alert, resolve_alert
from reconciliation.drift import taken_apart
from reconciliation.matching.manual import (
    ManualMatchError,
    accept_alone,
    items_of,
    manual_match,
    manual_unmatch,
)
from reconciliation.notifications import inbox, inbox_access
from reconciliation.operator import audit_trail as audit
from reconciliation.operator.body_conflicts import BodyChoiceError, TrueBodyChosen, choose_true_body
from reconciliation.store.models import Alert, Delivery, Match
from reconciliation.store.types import utcnow
from upstream.webhooks.payloads import PayloadReader

#: Most quarantined deliveries one "replay all" resets: the rest wait for the next press, so a
#: flood of bad deliveries cannot turn one click into an unbounded transaction.
REPLAY_ALL_MAX: Final = 500

#: Audit action names, as the trail shows them.
SIGNED_IN: Final = "signed in"
SIGNED_OUT: Final = "signed out"
ACKNOWLEDGED: Final = "acknowledged alert"
RESOLVED: Final = "resolved alert"
MATCHED: Final = "matched by hand"
ACCEPTED_ALONE: Final = "accepted without a counterpart"
UNMATCHED: Final = "unmatched"
REPLAYED: Final = "replayed delivery"
REPLAYED_ALL: Final = "replayed quarantined deliveries"
CHOSE_BODY: Final = "chose the true body"
REPORT_DOWNLOADED: Final = "downloaded report"


class ActionRefusedError(Exception):
    """The change cannot be made as asked; the message says why and what to do."""


def _need_reason(reason: str, what: str) -> str:
    text = reason.strip()
    if not text:
        raise ActionRefusedError(f"say why you {what}: the comment is kept in the audit trail")
    return text


def signed_in(session: Session, actor: str) -> None:
    audit.record(session, actor=actor, action=SIGNED_IN, subject="console")


def signed_out(session: Session, actor: str) -> None:
    audit.record(session, actor=actor, action=SIGNED_OUT, subject="console")


def report_downloaded(session: Session, actor: str, description: str) -> None:
    audit.record(session, actor=actor, action=REPORT_DOWNLOADED, subject=description)


def acknowledge(session: Session, actor: str, alert_id: int, comment: str) -> Alert:
    """Own an alert; the comment becomes its note."""
    why = _need_reason(comment, "acknowledge it")
    try:
        alert = acknowledge_alert(session, alert_id, by=actor, note=why)
    except AlertError as exc:
        raise ActionRefusedError(str(exc)) from None
    audit.record(session, actor=actor, action=ACKNOWLEDGED, subject=f"alert {alert_id}", reason=why)
    return alert


def resolve(session: Session, actor: str, alert_id: int, comment: str) -> Alert:
    """Close an alert with the reason it is closed."""
    why = _need_reason(comment, "resolve it")
    try:
        alert = resolve_alert(session, alert_id, by=actor, note=why)
    except AlertError as exc:
        raise ActionRefusedError(str(exc)) from None
    audit.record(session, actor=actor, action=RESOLVED, subject=f"alert {alert_id}", reason=why)
    return alert


def match(
    session: Session,
    actor: str,
    reason: str,
    *,
    posting_ids: Sequence[int] = (),
    transfer_id: int | None = None,
    notification_id: int | None = None,
) -> list[Match]:
    """The same manual match as `recon match`, with its audit row."""
    try:
        rows = manual_match(
            session,
            posting_ids=posting_ids,
            transfer_id=transfer_id,
            notification_id=notification_id,
            by=actor,
            reason=reason,
        )
    except ManualMatchError as exc:
        raise ActionRefusedError(str(exc)) from None
    subject = "match " + ", ".join(str(r.id) for r in rows)
    audit.record(session, actor=actor, action=MATCHED, subject=subject, reason=reason)
    return rows


def accept_without_counterpart(
    session: Session, actor: str, kind: str, item_id: int, reason: str
) -> Match:
    """Close one item with no counterpart, with the reason it needs none, and its audit row."""
    why = _need_reason(reason, "accept it without a counterpart")
    try:
        row = accept_alone(session, kind, item_id, by=actor, reason=why)
    except ManualMatchError as exc:
        raise ActionRefusedError(str(exc)) from None
    audit.record(
        session,
        actor=actor,
        action=ACCEPTED_ALONE,
        subject=f"{kind} {item_id} (match {row.id})",
        reason=why,
    )
    return row


def unmatch(session: Session, actor: str, match_id: int, reason: str) -> tuple[Match, AlertOutcome]:
    """Take a match apart, with its audit row; each item left with no counterpart gets its
    `unmatched_by_hand` alert at once (opened, or reopened), in the same transaction, so the
    decision never leaves an unexplained item silent until the next pass."""
    try:
        row = manual_unmatch(session, match_id, by=actor, reason=reason)
    except ManualMatchError as exc:
        raise ActionRefusedError(str(exc)) from None
    audit.record(session, actor=actor, action=UNMATCHED, subject=f"match {match_id}", reason=reason)
    found = taken_apart.findings(session, items_of(row))
    alerts = apply_assessments(
        session,
        [Assessment(kinds=taken_apart.UnmatchedByHand.kinds, findings=found, clears=False)],
        now=utcnow(),
        cap=max(1, len(found)),
        previous_pass_at=None,
    )
    return row, alerts


def replay(session: Session, actor: str, row_id: int) -> Delivery:
    """Reset one delivery to pending (the caller enqueues it after the commit)."""
    try:
        row = inbox_access.reset_for_replay(session, row_id)
    except (LookupError, ValueError) as exc:
        raise ActionRefusedError(str(exc)) from None
    audit.record(session, actor=actor, action=REPLAYED, subject=f"delivery {row_id}")
    return row


def choose_body(
    session: Session, actor: str, row_id: int, reason: str, reader: PayloadReader
) -> TrueBodyChosen:
    """Mark which body of a delivery id is true (`body_conflicts.choose_true_body`), audited."""
    why = _need_reason(reason, "chose this body")
    try:
        chosen = choose_true_body(session, row_id, by=actor, reason=why, reader=reader)
    except BodyChoiceError as exc:
        raise ActionRefusedError(str(exc)) from None
    audit.record(
        session,
        actor=actor,
        action=CHOSE_BODY,
        subject=f"delivery {row_id}",
        reason=f"{why}; kept as evidence: row " + ", ".join(str(r) for r in chosen.rejected_rows),
    )
    return chosen


def replay_quarantined(session: Session, actor: str) -> list[int]:
    """Reset the oldest quarantined deliveries (at most REPLAY_ALL_MAX); their row ids.

    Through the inbox's own bulk reset (`inbox_access.replay_deliveries`), with one audit row naming
    every delivery put back, so the trail says exactly which ones.
    """
    done = inbox_access.replay_deliveries(session, state=inbox.QUARANTINED, limit=REPLAY_ALL_MAX)
    if done.row_ids:
        audit.record(
            session,
            actor=actor,
            action=REPLAYED_ALL,
            subject=f"{len(done.row_ids)} quarantined deliveries",
            reason="rows "
            + ", ".join(str(i) for i in done.row_ids)
            + (f"; {done.remaining} still wait" if done.remaining else ""),
        )
    return list(done.row_ids)
