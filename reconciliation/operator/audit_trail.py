"""The audit trail of people's actions: append a row, read the newest rows a page at a time.

Every change a person makes through the operator console (and sign-in and sign-out) leaves one
`audit_events` row written in the same transaction as the change itself, so the trail can never
claim an action that did not happen, nor miss one that did.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.store.models import AuditEvent
from reconciliation.store.types import utcnow

#: Longest actor name kept (audit_events.actor is VARCHAR(128)).
ACTOR_MAX: Final = 128
#: Longest subject kept (audit_events.subject is VARCHAR(255)).
SUBJECT_MAX: Final = 255
#: Most rows one page of the trail shows: a page is read on every console visit to it.
PAGE_MAX: Final = 200


class AuditError(Exception):
    """An audit row cannot be written as asked; the message says what was wrong."""


def record(
    session: Session,
    *,
    actor: str,
    action: str,
    subject: str,
    reason: str | None = None,
    now: datetime | None = None,
) -> AuditEvent:
    """Append one row in the caller's transaction (committed with the change it describes)."""
    who = actor.strip()
    if not who:
        raise AuditError("an audit row needs the name of who acted")
    if len(who) > ACTOR_MAX:
        raise AuditError(f"actor name is {len(who)} characters; at most {ACTOR_MAX} are kept")
    row = AuditEvent(
        actor=who,
        action=action,
        subject=subject[:SUBJECT_MAX],
        reason=(reason or "").strip() or None,
        occurred_at=now or utcnow(),
    )
    session.add(row)
    session.flush()
    return row


@dataclass(frozen=True, slots=True)
class AuditPage:
    """Newest first; `next_before` is the id to pass back for the next (older) page."""

    events: list[AuditEvent]
    next_before: int | None


def recent(
    session: Session, *, subject: str | None = None, before: int | None = None, limit: int = 50
) -> AuditPage:
    """The newest rows (about one subject, when given), keyset-paged by id."""
    size = max(1, min(limit, PAGE_MAX))
    query = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(size + 1)
    if subject is not None:
        query = query.where(AuditEvent.subject == subject)
    if before is not None:
        query = query.where(AuditEvent.id < before)
    rows = list(session.scalars(query))
    more = len(rows) > size
    rows = rows[:size]
    return AuditPage(rows, rows[-1].id if more and rows else None)
