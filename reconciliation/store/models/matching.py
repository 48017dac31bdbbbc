"""What belongs together: match rows, the backlog of items seen but not matched yet, and alerts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from reconciliation.store.models.base import Base
from reconciliation.store.types import BigId, utcnow


class Match(Base):
    """Which posting, transfer and notification belong together, and by which rule.

    One transfer settles as several ledger legs, so one transfer appears in several rows, and so
    does the one notification that announced them; a posting appears in at most one active row.
    """

    __tablename__ = "matches"
    # One index per item column, each partial: only rows naming an item of that kind. Every
    # reader asks for rows naming a given item (`posting_id = ...`, a join on it), which implies
    # the column is not null, so each index serves them all; rows without the item (a failed
    # transfer has no posting, an inbound credit no transfer) cost no index entry. Writing
    # the index entries is most of what a full pass costs (bench/reconcile.py prints it as
    # ratio_write_to_bare_join), so an entry nobody can look up is not kept. No index on `rule` or the time columns: nothing
    # periodic reads matches by them.
    __table_args__ = (
        Index(
            "ix_matches_posting_id",
            "posting_id",
            postgresql_where=text("posting_id IS NOT NULL"),
            sqlite_where=text("posting_id IS NOT NULL"),
        ),
        Index(
            "ix_matches_transfer_id",
            "transfer_id",
            postgresql_where=text("transfer_id IS NOT NULL"),
            sqlite_where=text("transfer_id IS NOT NULL"),
        ),
        Index(
            "ix_matches_notification_id",
            "notification_id",
            postgresql_where=text("notification_id IS NOT NULL"),
            sqlite_where=text("notification_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    rule: Mapped[str] = mapped_column(String(32))
    # No foreign keys: rows are written set-wise from joins over existing items (which are never
    # deleted), and PostgreSQL's per-row FK triggers cost ~13 us each, three per row: 40 s of a
    # million-row pass. The indexes stay; they serve unmatching, attaching and the drift rules.
    posting_id: Mapped[int | None] = mapped_column(BigInteger)
    transfer_id: Mapped[int | None] = mapped_column(BigInteger)
    notification_id: Mapped[int | None] = mapped_column(BigInteger)
    matched_at: Mapped[datetime] = mapped_column(default=utcnow)
    matched_by: Mapped[str] = mapped_column(String(128), default="recon")
    reason: Mapped[str | None] = mapped_column(Text)
    unmatched_at: Mapped[datetime | None]
    unmatched_by: Mapped[str | None] = mapped_column(String(128))
    unmatch_reason: Mapped[str | None] = mapped_column(Text)


class MatchBacklog(Base):
    """Items a pass has seen but not matched yet: what the next pass looks at again.

    Together with the per-stream id watermarks (everything at or below has been seen), this is
    what keeps a pass incremental: it reads new ids and this short list, never the history.
    kind is 'posting', 'notification', 'transfer', or 'transferless' (a matched notification
    whose transfer we do not know yet, to attach when it arrives).
    """

    __tablename__ = "match_backlog"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    item_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    queued_at: Mapped[datetime] = mapped_column(default=utcnow)


class Alert(Base):
    """A drift worth a person's attention, deduplicated by fingerprint."""

    __tablename__ = "alerts"
    __table_args__ = (Index("ix_alerts_state_opened", "state", "opened_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    severity: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[str] = mapped_column(String(128), unique=True)
    evidence: Mapped[dict[str, Any]]
    state: Mapped[str] = mapped_column(String(16), default="open")
    opened_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(default=utcnow)
    occurrences: Mapped[int] = mapped_column(Integer, default=1)
    acknowledged_at: Mapped[datetime | None]
    acknowledged_by: Mapped[str | None] = mapped_column(String(128))
    resolved_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(128))
    note: Mapped[str | None] = mapped_column(Text)
    # The state last handed to the outbound sinks (webhook): an outbox, so an alert raised
    # anywhere (a pass, the receiver) goes out once, and a failed send is retried next pass.
    published_state: Mapped[str | None] = mapped_column(String(16))
