"""The audit trail of people's actions: append a row, read the newest rows a page at a time.

Every change a person makes, through any door (the CLI, the JSON API, the console; sign-in and
sign-out too), leaves one `audit_events` row written in the same transaction as the change
itself (reconciliation.operator.actions), so the trail can never claim an action that did not
happen, nor miss one that did. The row names the `Actor`: who, and through which door.
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

#: The doors a person acts through, as audit rows name them.
CLI: Final = "cli"
API: Final = "api"
CONSOLE: Final = "console"
DOORS: Final = (CLI, API, CONSOLE)


class AuditError(Exception):
    """An audit row cannot be written as asked; the message says what was wrong."""


@dataclass(frozen=True, slots=True)
class Actor:
    """Who acts and through which door: what every operator action is done by.

    How each door knows the name: the console from the session (the name given at sign-in with
    the admin token), the API from the request's `by` (the bearer token itself names nobody),
    the CLI from `--by`, else the user running the command.
    """

    name: str
    door: str

    def __post_init__(self) -> None:
        who = self.name.strip()
        if not who:
            raise AuditError("say who acts (a name or e-mail): the audit trail records it")
        if "\x00" in who:
            # PostgreSQL's text columns cannot hold a NUL: refused here, not by the driver.
            raise AuditError("the name holds a NUL character, which the audit trail cannot keep")
        if len(who) > ACTOR_MAX:
            raise AuditError(f"the name is {len(who)} characters; at most {ACTOR_MAX} are kept")
        if self.door not in DOORS:
            raise AuditError(f"door {self.door!r} is not one of {', '.join(DOORS)}")
        object.__setattr__(self, "name", who)


def record(
    session: Session,
    *,
    actor: Actor,
    action: str,
    subject: str,
    reason: str | None = None,
    now: datetime | None = None,
) -> AuditEvent:
    """Append one row in the caller's transaction (committed with the change it describes)."""
    row = AuditEvent(
        actor=actor.name,
        door=actor.door,
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
