"""Every change a person makes, whichever door it comes through, each with its one audit row.

The one way in for the CLI (`recon alerts`, `recon match|accept|unmatch`, `recon deliveries
replay|choose`, `recon console sessions end-all`), the JSON API (`/alerts/{id}/ack|resolve`,
`/deliveries/...`) and the console: acknowledge or resolve an alert; match by hand, accept one
item without a counterpart, or unmatch (through `reconciliation.matching.manual`); put one
delivery, or every quarantined or pending one, back in the inbox; choose the true body of a
delivery id sent with two bodies; sign in to the console, sign out, end every session; download
a report (the console's downloads, every report the API answers, `recon report --output`).

Each action is a function `(session, actor, ...)` that makes the change and writes exactly one
audit row naming the actor and their door (reconciliation.operator.audit_trail). A door runs
it with `OperatorService.perform`, which opens the transaction and commits it, so the change and
its row land together or not at all, and the door only turns `ActionRefusedError` into its own
answer (a CLI error line, a 400 or 404, a console refusal page). Errors of the services below
are re-raised as `ActionRefusedError` carrying their message, which already says what to do
instead; `UnknownSubjectError`, its kind, when the id names nothing.

Actions that ask the provider for something (a transfer, an endpoint's lifecycle, the webhook
registration, a sandbox credit) cannot be one transaction with the provider's answer: they live
in reconciliation.operator.provider_actions, run with `OperatorService.perform_at_provider`, and
each says which of its transactions carries its one audit row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Concatenate, Final, ParamSpec, TypeVar

from sqlalchemy.orm import Session, sessionmaker

import reconciliation.operator.audit_trail as audit
from reconciliation.alerts.changes import AlertOutcome, Assessment, apply_assessments
from reconciliation.alerts.lifecycle import (
    AlertError,
    AlertNotFoundError,
    acknowledge_alert,
    resolve_alert,
)
from reconciliation.drift import taken_apart
from reconciliation.matching.manual import (
    ManualMatchError,
    accept_alone,
    items_of,
    manual_match,
    manual_unmatch,
)
from reconciliation.notifications import inbox_access
from reconciliation.notifications.inbox_access import BulkReplay
from reconciliation.operator.audit_trail import Actor, AuditError
from reconciliation.operator.body_conflicts import BodyChoiceError, TrueBodyChosen, choose_true_body
from reconciliation.operator.console_sessions import (
    SessionRules,
    end_all,
    end_session,
    open_session,
)
from reconciliation.policy import ReconcilePolicy
from reconciliation.reports.asked import ReportAsked, build_asked
from reconciliation.reports.model import Report
from reconciliation.reports.query import ReportError
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, Delivery, Match
from reconciliation.store.types import utcnow
from upstream import PayloadReader

P = ParamSpec("P")
T = TypeVar("T")

#: Most quarantined deliveries one press of the console's "replay all" resets: the rest wait for
#: the next press, so a flood of bad deliveries cannot turn one click into a long transaction.
REPLAY_ALL_MAX: Final = 500

#: Audit action names, as the trail shows them.
SIGNED_IN: Final = "signed in"
SIGNED_OUT: Final = "signed out"
ENDED_ALL_SESSIONS: Final = "ended every console session"
ACKNOWLEDGED: Final = "acknowledged alert"
RESOLVED: Final = "resolved alert"
MATCHED: Final = "matched by hand"
ACCEPTED_ALONE: Final = "accepted without a counterpart"
UNMATCHED: Final = "unmatched"
REPLAYED: Final = "replayed delivery"
REPLAYED_MANY: Final = "replayed {state} deliveries"
CHOSE_BODY: Final = "chose the true body"
REPORT_DOWNLOADED: Final = "downloaded report"


class ActionRefusedError(Exception):
    """The change cannot be made as asked; the message says why and what to do."""


class UnknownSubjectError(ActionRefusedError):
    """The id names no alert or delivery (a 404 to the API)."""


class OperatorService:
    """One actor's way to every action: `perform(action, *args)` runs `action(session, actor,
    *args)` in its own transaction and returns what it returned (loaded values stay readable
    after the commit)."""

    def __init__(self, store: sessionmaker[Session], name: str, door: str) -> None:
        try:
            self.actor = Actor(name, door)
        except AuditError as exc:
            raise ActionRefusedError(str(exc)) from None
        self._store = store

    def perform(
        self,
        action: Callable[Concatenate[Session, Actor, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        with transaction(self._store) as session:
            return action(session, self.actor, *args, **kwargs)

    def perform_at_provider(
        self,
        action: Callable[Concatenate[sessionmaker[Session], Actor, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run `action(store, actor, *args)`, which calls the provider between transactions of
        its own (reconciliation.operator.provider_actions) and writes its audit row in one of
        them; the provider's errors reach the door as they are, for its own answer."""
        return action(self._store, self.actor, *args, **kwargs)


@contextmanager
def _refused(*errors: type[Exception]) -> Iterator[None]:
    """The service's errors below, as `ActionRefusedError` carrying their message (which says
    what to do instead); `AlertNotFoundError` as `UnknownSubjectError`, its kind."""
    try:
        yield
    except AlertNotFoundError as exc:
        raise UnknownSubjectError(str(exc)) from None
    except errors as exc:
        raise ActionRefusedError(str(exc)) from None


def _need_reason(reason: str | None, what: str) -> str:
    text = (reason or "").strip()
    if not text:
        raise ActionRefusedError(f"say why you {what}: the reason is kept in the audit trail")
    if "\x00" in text:
        # PostgreSQL's text columns cannot hold a NUL: refused here, not by the driver.
        raise ActionRefusedError(
            "the reason holds a NUL character, which the audit trail cannot keep"
        )
    return text


def _row_id(row_id: int) -> int:
    """A number no row can have is refused here, before the database driver overflows on it."""
    with _refused(ValueError):
        return inbox_access.checked_row_id(row_id)


def _delivery(session: Session, row_id: int) -> Delivery:
    found = session.get(Delivery, _row_id(row_id))
    if found is None:
        raise UnknownSubjectError(f"no delivery with row id {row_id}: see `recon deliveries list`")
    return found


def sign_in(session: Session, actor: Actor, secret: str, rules: SessionRules) -> None:
    """Open a console session (its cookie carries `secret`)."""
    open_session(session, actor.name, secret, rules)
    audit.record(session, actor=actor, action=SIGNED_IN, subject="console")


def sign_out(session: Session, actor: Actor, secret: str) -> None:
    """End the console session whose cookie carries `secret`."""
    end_session(session, secret)
    audit.record(session, actor=actor, action=SIGNED_OUT, subject="console")


def end_all_sessions(session: Session, actor: Actor) -> int:
    """End every console session at once (a cookie may have been copied); how many ended."""
    ended = end_all(session)
    audit.record(
        session, actor=actor, action=ENDED_ALL_SESSIONS, subject="console", reason=f"{ended} ended"
    )
    return ended


def download_report(
    session: Session,
    actor: Actor,
    asked: ReportAsked,
    rules: ReconcilePolicy,
    deliver: Callable[[Report], T],
) -> T:
    """A report leaves recon as a file: build it, hand it to the door's `deliver` (which renders
    it, and the CLI writes its file), and record who took which window. The row is written
    last, in the transaction that read the report, so a report that could not be built or
    delivered leaves none, and on SQLite the store is locked for writing only at the end."""
    with _refused(ReportError):
        report = build_asked(session, asked, rules, utcnow())
    delivered = deliver(report)
    audit.record(session, actor=actor, action=REPORT_DOWNLOADED, subject=asked.described(report))
    return delivered


def _alert_change(
    change: Callable[..., Alert], action: str, what: str
) -> Callable[[Session, Actor, int, str | None], Alert]:
    """An action on one alert: `change` with the reason as its note, and the audit row."""

    def act(session: Session, actor: Actor, alert_id: int, note: str | None) -> Alert:
        why = _need_reason(note, what)
        with _refused(AlertError):
            alert = change(session, alert_id, by=actor.name, note=why)
        audit.record(session, actor=actor, action=action, subject=f"alert {alert_id}", reason=why)
        return alert

    return act


#: Own an alert; the reason becomes its note.
acknowledge: Final = _alert_change(acknowledge_alert, ACKNOWLEDGED, "acknowledge it")
#: Close an alert with the reason it is closed.
resolve: Final = _alert_change(resolve_alert, RESOLVED, "resolve it")


def match(
    session: Session,
    actor: Actor,
    reason: str,
    *,
    posting_ids: Sequence[int] = (),
    transfer_id: int | None = None,
    notification_id: int | None = None,
) -> list[Match]:
    """Match an item with at least one counterpart by hand."""
    with _refused(ManualMatchError):
        rows = manual_match(
            session,
            posting_ids=posting_ids,
            transfer_id=transfer_id,
            notification_id=notification_id,
            by=actor.name,
            reason=reason,
        )
    subject = "match " + ", ".join(str(r.id) for r in rows)
    audit.record(session, actor=actor, action=MATCHED, subject=subject, reason=reason)
    return rows


def accept_without_counterpart(
    session: Session, actor: Actor, kind: str, item_id: int, reason: str
) -> Match:
    """Close one item with no counterpart, with the reason it needs none."""
    why = _need_reason(reason, "accept it without a counterpart")
    with _refused(ManualMatchError):
        row = accept_alone(session, kind, item_id, by=actor.name, reason=why)
    audit.record(
        session,
        actor=actor,
        action=ACCEPTED_ALONE,
        subject=f"{kind} {item_id} (match {row.id})",
        reason=why,
    )
    return row


def unmatch(
    session: Session, actor: Actor, match_id: int, reason: str
) -> tuple[Match, AlertOutcome]:
    """Take a match apart; each item left with no counterpart gets its `unmatched_by_hand`
    alert at once (opened, or reopened), in the same transaction, so the decision never leaves
    an unexplained item silent until the next pass."""
    with _refused(ManualMatchError):
        row = manual_unmatch(session, match_id, by=actor.name, reason=reason)
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


def replay(session: Session, actor: Actor, row_id: int) -> Delivery:
    """Reset one delivery to pending (the door enqueues it after the commit)."""
    _delivery(session, row_id)
    with _refused(inbox_access.RejectedBodyError):
        row = inbox_access.reset_for_replay(session, row_id)
    audit.record(session, actor=actor, action=REPLAYED, subject=f"delivery {row_id}")
    return row


def replay_many(
    session: Session, actor: Actor, state: str, limit: int = inbox_access.MAX_REPLAY
) -> BulkReplay:
    """Reset the oldest deliveries in `state` (quarantined or pending) to pending, at most
    `limit`, through the inbox's own bulk reset (`inbox_access.replay_deliveries`); the door
    enqueues the row ids after the commit. The audit row names every row put back, so the
    trail says exactly which ones (and that none were, when none waited)."""
    with _refused(ValueError):
        done = inbox_access.replay_deliveries(session, state=state, limit=limit)
    rows = ", ".join(str(i) for i in done.row_ids) or "none"
    audit.record(
        session,
        actor=actor,
        action=REPLAYED_MANY.format(state=state),
        subject=f"{len(done.row_ids)} {state} deliveries",
        reason=f"rows {rows}" + (f"; {done.remaining} still wait" if done.remaining else ""),
    )
    return done


def choose_body(
    session: Session, actor: Actor, row_id: int, reason: str, reader: PayloadReader
) -> TrueBodyChosen:
    """Mark which body of a delivery id is true (`body_conflicts.choose_true_body`)."""
    why = _need_reason(reason, "chose this body")
    _delivery(session, row_id)
    with _refused(BodyChoiceError):
        chosen = choose_true_body(session, row_id, by=actor.name, reason=why, reader=reader)
    audit.record(
        session,
        actor=actor,
        action=CHOSE_BODY,
        subject=f"delivery {row_id}",
        reason=f"{why}; kept as evidence: row " + ", ".join(str(r) for r in chosen.rejected_rows),
    )
    return chosen
