"""recon's own bookkeeping: leases, watermarks, the operator audit trail and audit runs."""

from __future__ import annotations

import uuid
from datetime import date, datetime

from sqlalchemy import (
    BigInteger,
    Date,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from reconciliation.store.models.base import Base
from reconciliation.store.types import Amount, BigId, utcnow


class Lease(Base):
    """A named, expiring lock in the store (the scheduler's singleton, one-off jobs)."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime]


class Watermark(Base):
    """Progress markers of incremental passes (the highest row id a pass has looked at), and
    running totals of money (retention's pruned net per holding), hence an amount column."""

    __tablename__ = "watermarks"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[int] = mapped_column(Amount(), default=0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class ConsoleSession(Base):
    """A signed-in console session, kept in the store so every web process agrees on it.

    The cookie carries a random secret; the row is keyed by its SHA-256, so reading the table
    gives no cookie that works. Sign-out deletes the row, `recon console sessions end-all`
    deletes them all; a row past `expires_at` (absolute) or idle past the configured timeout
    since `last_seen_at` no longer signs anyone in, and is deleted at the next sign-in.
    """

    __tablename__ = "console_sessions"
    __table_args__ = (Index("ix_console_sessions_expires_at", "expires_at"),)

    secret_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]


class AuditEvent(Base):
    """One thing a person did: who, what, why, when, and through which door (`cli`, `api`,
    `console`: reconciliation.operator.audit_trail.DOORS).

    Append-only: rows are never updated or deleted, so the table is the record an auditor reads.
    `subject` names what was acted on in words a person can search ("alert 12", "delivery 40").
    `door` is empty on rows written before migration 0006, when it was not recorded.
    """

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_subject", "subject", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    reason: Mapped[str | None] = mapped_column(Text)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    door: Mapped[str | None] = mapped_column(String(16))


class AuditRun(Base):
    """One audit of the store's postings against the gateway's own activity (`recon audit`).

    Kept so a report can say when the books were last proven and how: which holdings, how many
    postings the gateway showed, how many disagreed. `digest` is the audit's checksum of every
    posting it compared (equal digests: the same postings, whichever deployment ran it).
    `status` is 'running' until the audit ends, then 'clean', 'diverged' or 'failed'.
    """

    __tablename__ = "audit_runs"
    __table_args__ = (Index("ix_audit_runs_finished", "finished_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(16))
    #: What was asked for: one holding ref, a since date, or NULL for everything.
    holding_ref: Mapped[uuid.UUID | None]
    since: Mapped[datetime | None]
    holdings: Mapped[int] = mapped_column(Integer, default=0)
    postings: Mapped[int] = mapped_column(BigInteger, default=0)
    divergences: Mapped[int] = mapped_column(BigInteger, default=0)
    missing: Mapped[int] = mapped_column(BigInteger, default=0)
    unknown: Mapped[int] = mapped_column(BigInteger, default=0)
    differing: Mapped[int] = mapped_column(BigInteger, default=0)
    digest: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    #: The first and last UTC day of the postings it compared (NULL: it compared none), so a
    #: report says which days the verdict covers.
    first_day: Mapped[date | None] = mapped_column(Date)
    last_day: Mapped[date | None] = mapped_column(Date)
