"""The ledger stream's tables: holdings and their locators, activity cursors, postings,
balance snapshots and the checks of a balance against its postings.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from reconciliation.store.database_clock import DatabaseMillis
from reconciliation.store.models.base import EXCEPTION, UNMATCHED, Base
from reconciliation.store.types import UNIT_CODE_LENGTH, Amount, BigId, utcnow


class Holding(Base):
    """A balance at the provider: account + endpoint + holding, in one value unit."""

    __tablename__ = "holdings"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_ref: Mapped[uuid.UUID]
    endpoint_ref: Mapped[uuid.UUID] = mapped_column(index=True)
    holding_ref: Mapped[uuid.UUID] = mapped_column(unique=True)
    owner_ref: Mapped[uuid.UUID | None]
    unit_kind: Mapped[str] = mapped_column(String(16), default="fiat")
    currency: Mapped[str] = mapped_column(String(UNIT_CODE_LENGTH))
    template: Mapped[str | None] = mapped_column(String(64))
    ledger_partition: Mapped[str | None] = mapped_column(String(64))
    watched: Mapped[bool] = mapped_column(Boolean, default=True)
    discovered_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Locator(Base):
    """How the outside world addresses a holding (a bank account number)."""

    __tablename__ = "locators"

    id: Mapped[int] = mapped_column(primary_key=True)
    holding_id: Mapped[int] = mapped_column(ForeignKey("holdings.id"), index=True)
    locator_ref: Mapped[uuid.UUID] = mapped_column(unique=True)
    form: Mapped[str] = mapped_column(String(64))
    display: Mapped[str] = mapped_column(String(255))
    bank_code: Mapped[str | None] = mapped_column(String(16))
    account_number: Mapped[str | None] = mapped_column(String(32), index=True)
    account_name: Mapped[str | None] = mapped_column(String(255))


class ActivityCursor(Base):
    """Where the activity poller of one holding resumes, and who may poll it now.

    The four cursor parts are kept as the exact text the gateway returned in `nextCursor` (or,
    when its last page gave none, the last entry's own `postedAt`, `receiptRef`, `lineRef`:
    `cursor_source` says which): resumed verbatim, never rebuilt from max(posted_at) nor
    re-formatted. A holding read by a newest-first walk (upstream.activity_walk) keeps the
    walk's state here too, written with each page: the cursor continues the walk, and
    `walk_top_posted_at` / `high_water_posted_at` are listed `postedAt` texts.

    `largest_page`, `page_size` and `oldest_first` are what reads of this holding found out
    about the provider's paging; readers take them across all rows (the provider is one).
    """

    __tablename__ = "activity_cursors"
    # What is due is chosen from an index, a slice at a time, highest priority first
    # (reconciliation.postings.due_reads): scanning every row per tick is what made the cost
    # grow with holdings. Every poll rewrites next_poll_at, so those updates are no longer HOT;
    # pages are still left half empty, so the new version usually lands on the same page.
    __table_args__ = (
        Index("ix_activity_cursors_due", "due_priority", "next_poll_at"),
        Index("ix_activity_cursors_balance_due", "balance_due_at"),
        Index("ix_activity_cursors_changed", "changed_ms"),
        {"postgresql_with": {"fillfactor": 50}},
    )

    holding_id: Mapped[int] = mapped_column(ForeignKey("holdings.id"), primary_key=True)
    after_posted_at: Mapped[str | None] = mapped_column(Text)
    after_receipt_ref: Mapped[str | None] = mapped_column(Text)
    after_line_ref: Mapped[str | None] = mapped_column(Text)
    sort_direction: Mapped[str | None] = mapped_column(Text)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None]
    next_poll_at: Mapped[datetime | None]
    last_polled_at: Mapped[datetime | None]
    last_advanced_at: Mapped[datetime | None]
    consecutive_errors: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    postings_read: Mapped[int] = mapped_column(BigInteger, default=0)
    # Reads that reached the last page. A poll message carries the count it was sent at and is
    # skipped once a later read completed, so a duplicate message costs no gateway request.
    reads_completed: Mapped[int] = mapped_column(BigInteger, default=0)
    # "gateway" (nextCursor as returned) or "entry" (the last entry's position, no nextCursor).
    cursor_source: Mapped[str | None] = mapped_column(String(16))
    # Newest-first walk: the postedAt of the walk's first entry, and the one it stops below.
    walk_top_posted_at: Mapped[str | None] = mapped_column(Text)
    high_water_posted_at: Mapped[str | None] = mapped_column(Text)
    # Most entries one page of this holding carried (tells a capped page from the last one).
    largest_page: Mapped[int | None] = mapped_column(Integer)
    # The page size the provider accepted after refusing a larger one (None: never refused).
    page_size: Mapped[int | None] = mapped_column(Integer)
    # Whether the provider served (True) or refused (False) an oldest_first read; None: unasked.
    oldest_first: Mapped[bool | None] = mapped_column(Boolean)
    # Why the holding is due (reconciliation.postings.due_reads: 0 signalled, 1 catch-up,
    # 2 silent): reads are chosen in this order under the one gateway budget.
    due_priority: Mapped[int] = mapped_column(SmallInteger, default=2, server_default="2")
    # The latest notification or terminal transfer that named the holding: a read that began
    # before it leaves the holding due again, so a signal during a read is never lost.
    signalled_at: Mapped[datetime | None]
    # Completed reads in a row that found nothing: a quiet holding's next read backs off.
    quiet_reads: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # When the holding's balance snapshot is due: soon after a read that stored postings, at
    # the staleness ceiling otherwise (None: due, as for a holding never snapshotted).
    balance_due_at: Mapped[datetime | None]
    # When the row last changed, by the database's clock (epoch ms), whatever wrote it: a read
    # released past a balance snapshot makes that snapshot judgeable, so the balance rule looks
    # at the holdings whose cursor changed since its previous read (from this column's index)
    # instead of keeping every holding with a snapshot not yet read past in view, pass after pass.
    changed_ms: Mapped[int | None] = mapped_column(
        BigInteger, default=DatabaseMillis(), onupdate=DatabaseMillis()
    )


class Posting(Base):
    """A committed ledger line behind a holding's balance: the ledger's truth.

    The catch-up writes a million of these, so every index entry is one its readers need:
    the primary key; (journal_ref, line_ref), the conflict target that makes a page read twice
    land once; receipt_ref, for the operator's candidates of a notification or a transfer
    (`reconciliation.matching.candidates`); (holding_id, posted_at), for the balance check's
    sums, the ledger audit and a holding's history. `match_status` is indexed only where it is
    'exception': that is what every reader of it asks for (the exception queue, the taken-apart
    rule, the rebuild), and every posting is written 'unmatched', so a full index would hold a
    million entries of which its readers skip all but a few.
    """

    __tablename__ = "postings"
    __table_args__ = (
        UniqueConstraint("journal_ref", "line_ref"),
        Index("ix_postings_holding_posted", "holding_id", "posted_at"),
        Index(
            "ix_postings_exception_id",
            "id",
            postgresql_where=text(f"match_status = '{EXCEPTION}'"),
            sqlite_where=text(f"match_status = '{EXCEPTION}'"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    journal_ref: Mapped[uuid.UUID]
    line_ref: Mapped[uuid.UUID]
    receipt_ref: Mapped[uuid.UUID] = mapped_column(index=True)
    # No foreign key (migration 0009): a posting is written only by the page write of the
    # reader holding its holding's lease, whose cursor row references the holding, and holdings
    # are never deleted (docs/decisions.md, "The postings' holding without a foreign key").
    # PostgreSQL checked the key row by row, about 6 us a posting of a catch-up.
    holding_id: Mapped[int]
    posted_at: Mapped[datetime]
    side: Mapped[str] = mapped_column(String(16))
    effect: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(64))
    amount_minor: Mapped[int] = mapped_column(Amount())
    currency: Mapped[str] = mapped_column(String(UNIT_CODE_LENGTH))
    partition: Mapped[str | None] = mapped_column(String(64))
    normal_side: Mapped[str | None] = mapped_column(String(32))
    ingested_at: Mapped[datetime] = mapped_column(default=utcnow)
    match_status: Mapped[str] = mapped_column(String(16), default=UNMATCHED)


class BalanceSnapshot(Base):
    """What the gateway said a holding's balance was, and when we asked."""

    __tablename__ = "balance_snapshots"
    __table_args__ = (Index("ix_balance_snapshots_holding_observed", "holding_id", "observed_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    holding_id: Mapped[int] = mapped_column(ForeignKey("holdings.id"))
    settled_minor: Mapped[int] = mapped_column(Amount())
    available_minor: Mapped[int] = mapped_column(Amount())
    reserved_minor: Mapped[int] = mapped_column(Amount())
    projection_state: Mapped[str | None] = mapped_column(String(32))
    observed_at: Mapped[datetime] = mapped_column(default=utcnow)


class BalanceCheck(Base):
    """One comparison of a balance snapshot with the posted sum behind it (reconciler's record).

    Kept per snapshot so reports can show drift per holding and drift over time without
    re-summing the ledger; `explained_by_lag` marks a difference the projection's grace covers.
    """

    __tablename__ = "balance_checks"
    __table_args__ = (Index("ix_balance_checks_holding_observed", "holding_id", "observed_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    snapshot_id: Mapped[int] = mapped_column(ForeignKey("balance_snapshots.id"), unique=True)
    holding_id: Mapped[int] = mapped_column(ForeignKey("holdings.id"))
    observed_at: Mapped[datetime]
    settled_minor: Mapped[int] = mapped_column(Amount())
    posted_minor: Mapped[int] = mapped_column(Amount())
    drift_minor: Mapped[int] = mapped_column(Amount())
    explained_by_lag: Mapped[bool] = mapped_column(Boolean, default=False)
    # The highest posting id the posted sum has seen: the next check adds only what came after.
    postings_through_id: Mapped[int] = mapped_column(BigInteger, default=0)
    checked_at: Mapped[datetime] = mapped_column(default=utcnow)
