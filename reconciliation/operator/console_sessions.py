"""Console sessions in the store: opened at sign-in, checked on every request, ended at
sign-out, by idling, by their absolute end, or all at once (`recon console sessions end-all`).

Kept in the store rather than only in a signed cookie so that ending a session means something:
a copied cookie stops working the moment its session is ended, in every web process at once.
The store holds the SHA-256 of each session's secret, never the secret itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from reconciliation.store.models import ConsoleSession
from reconciliation.store.types import utcnow

#: A session's last-seen time is written at most this often (or a quarter of the idle timeout,
#: when that is shorter): a page view is a read, and writing a row on each would turn browsing
#: into a write load. The idle timeout is therefore exact to within this many seconds.
TOUCH_EVERY_SECONDS: Final = 60


@dataclass(frozen=True, slots=True)
class SessionRules:
    """How long a session lives: at most `absolute_seconds` after sign-in, and no more than
    `idle_seconds` after the last request."""

    absolute_seconds: int
    idle_seconds: int


def secret_hash(secret: str) -> str:
    """What the store keeps of a session secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def open_session(
    session: Session,
    operator: str,
    secret: str,
    rules: SessionRules,
    *,
    now: datetime | None = None,
) -> ConsoleSession:
    """Record a new session; sessions already over are deleted on the way (they are few)."""
    now = now or utcnow()
    _delete_over(session, rules, now)
    row = ConsoleSession(
        secret_sha256=secret_hash(secret),
        operator=operator,
        created_at=now,
        last_seen_at=now,
        expires_at=now + timedelta(seconds=rules.absolute_seconds),
    )
    session.add(row)
    return row


def live_operator(
    session: Session, secret: str, rules: SessionRules, *, now: datetime | None = None
) -> str | None:
    """The operator of a live session with this secret (its last-seen time moved on), or None
    when it was ended, idled out or is past its absolute end."""
    now = now or utcnow()
    row = session.get(ConsoleSession, secret_hash(secret))
    if row is None or _over(row, rules, now):
        return None
    touch_every = min(TOUCH_EVERY_SECONDS, rules.idle_seconds / 4)
    if now - row.last_seen_at >= timedelta(seconds=touch_every):
        row.last_seen_at = now
    return row.operator


def end_session(session: Session, secret: str) -> bool:
    """End one session (sign-out); False when it was already over."""
    result = session.execute(
        delete(ConsoleSession).where(ConsoleSession.secret_sha256 == secret_hash(secret))
    )
    return bool(getattr(result, "rowcount", 0))


def end_all(session: Session) -> int:
    """End every session at once; how many there were, live or not (the audit row is the
    caller's: reconciliation.operator.actions.end_all_sessions)."""
    result = session.execute(delete(ConsoleSession))
    return int(getattr(result, "rowcount", 0) or 0)


def count_live(session: Session, rules: SessionRules, *, now: datetime | None = None) -> int:
    """How many sessions can still sign someone in."""
    now = now or utcnow()
    rows = session.scalars(select(ConsoleSession)).all()
    return sum(not _over(row, rules, now) for row in rows)


def _over(row: ConsoleSession, rules: SessionRules, now: datetime) -> bool:
    return row.expires_at <= now or now - row.last_seen_at >= timedelta(seconds=rules.idle_seconds)


def _delete_over(session: Session, rules: SessionRules, now: datetime) -> None:
    idle_since = now - timedelta(seconds=rules.idle_seconds)
    session.execute(
        delete(ConsoleSession).where(
            or_(ConsoleSession.expires_at <= now, ConsoleSession.last_seen_at <= idle_since)
        )
    )


__all__ = [
    "SessionRules",
    "count_live",
    "end_all",
    "end_session",
    "live_operator",
    "open_session",
    "secret_hash",
]
