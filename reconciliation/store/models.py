"""The local store: one metadata for SQLite and PostgreSQL.

Money is integer minor units (BIGINT) everywhere; there is no float column. Every timestamp is
aware UTC (`UTCDateTime`). Uniqueness constraints carry the idempotency of re-ingestion:
postings on (journal_ref, line_ref), deliveries on (delivery_id, body_sha256), alerts on
fingerprint, transfers on transfer_ref, outbound requests on idempotency_key.

`match_status` on the three streams is 'exception' for an item a person must decide, and
'unmatched' otherwise. Whether an item is matched is answered by `matches` (an active row names
it), not by rewriting the item: a pass over a million items must not rewrite a million rows
(measured: ~40 us a row here, more than the whole pass's budget). Matching is incremental
through per-stream id watermarks and `match_backlog` (items seen but not matched yet); see
reconciliation/matching/backlog.py.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar, Final

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from reconciliation.store.types import BigId, UTCDateTime, utcnow

#: Constraint names are deterministic so migrations can drop and alter them on both databases.
NAMING_CONVENTION: Final = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: match_status values shared by postings, transfers and notifications.
UNMATCHED: Final = "unmatched"
MATCHED: Final = "matched"
EXCEPTION: Final = "exception"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        uuid.UUID: Uuid(),
    }


class Holding(Base):
    """A balance at the provider: account + endpoint + holding, in one value unit."""

    __tablename__ = "holdings"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_ref: Mapped[uuid.UUID]
    endpoint_ref: Mapped[uuid.UUID] = mapped_column(index=True)
    holding_ref: Mapped[uuid.UUID] = mapped_column(unique=True)
    owner_ref: Mapped[uuid.UUID | None]
    unit_kind: Mapped[str] = mapped_column(String(16), default="fiat")
    currency: Mapped[str] = mapped_column(String(8))
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
    # Every poll rewrites next_poll_at and the lease columns. No index covers them and pages
    # are left half empty, so PostgreSQL updates the row in place (HOT) and prunes old versions
    # as it reads the page, without VACUUM (once no older snapshot on the server needs them).
    __table_args__ = ({"postgresql_with": {"fillfactor": 50}},)

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


class Posting(Base):
    """A committed ledger line behind a holding's balance: the ledger's truth."""

    __tablename__ = "postings"
    __table_args__ = (
        UniqueConstraint("journal_ref", "line_ref"),
        Index("ix_postings_holding_posted", "holding_id", "posted_at"),
        Index("ix_postings_match_status_id", "match_status", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    journal_ref: Mapped[uuid.UUID]
    line_ref: Mapped[uuid.UUID]
    receipt_ref: Mapped[uuid.UUID] = mapped_column(index=True)
    holding_id: Mapped[int] = mapped_column(ForeignKey("holdings.id"))
    posted_at: Mapped[datetime]
    side: Mapped[str] = mapped_column(String(16))
    effect: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(64))
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(8))
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
    settled_minor: Mapped[int] = mapped_column(BigInteger)
    available_minor: Mapped[int] = mapped_column(BigInteger)
    reserved_minor: Mapped[int] = mapped_column(BigInteger)
    projection_state: Mapped[str | None] = mapped_column(String(32))
    observed_at: Mapped[datetime] = mapped_column(default=utcnow)


class Transfer(Base):
    """A move of value we asked for, were told of, or imported; polled until terminal."""

    __tablename__ = "transfers"
    __table_args__ = (
        # Only transfers still polled are in it: the claim reads what is due, not the history.
        Index(
            "ix_transfers_poll_due",
            "next_poll_at",
            postgresql_where=text("NOT is_terminal"),
            sqlite_where=text("is_terminal = 0"),
        ),
        # Retention compacts status histories in the order transfers turned terminal.
        Index("ix_transfers_terminal_at", "terminal_at"),
        Index("ix_transfers_match_status_id", "match_status", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    transfer_ref: Mapped[uuid.UUID] = mapped_column(unique=True)
    source_account_ref: Mapped[uuid.UUID | None]
    source_endpoint_ref: Mapped[uuid.UUID | None]
    source_holding_ref: Mapped[uuid.UUID | None]
    dest_account_ref: Mapped[uuid.UUID | None]
    dest_endpoint_ref: Mapped[uuid.UUID | None]
    dest_holding_ref: Mapped[uuid.UUID | None]
    currency: Mapped[str | None] = mapped_column(String(8))
    amount_minor: Mapped[int | None] = mapped_column(BigInteger)
    material_fingerprint: Mapped[str | None] = mapped_column(String(128))
    requested_by: Mapped[uuid.UUID | None]
    stage: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(String(64))
    revision: Mapped[int | None] = mapped_column(Integer)
    is_terminal: Mapped[bool] = mapped_column(Boolean, default=False)
    is_successful: Mapped[bool | None] = mapped_column(Boolean)
    requested_at: Mapped[datetime | None]
    decided_at: Mapped[datetime | None]
    origin: Mapped[str] = mapped_column(String(16))
    next_poll_at: Mapped[datetime | None]
    poll_attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_polled_at: Mapped[datetime | None]
    finality_deadline_at: Mapped[datetime | None]
    terminal_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    match_status: Mapped[str] = mapped_column(String(16), default=UNMATCHED)


class TransferChange(Base):
    """Each stage, status or revision change we observed, for the audit trail."""

    __tablename__ = "transfer_changes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    transfer_id: Mapped[int] = mapped_column(ForeignKey("transfers.id"), index=True)
    observed_at: Mapped[datetime] = mapped_column(default=utcnow)
    stage: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(String(64))
    revision: Mapped[int | None] = mapped_column(Integer)


class TransferIntent(Base):
    """A transfer we are about to ask the gateway for, recorded before the request goes out.

    The gateway names a transfer only in its answer, so until then the intent is all the store
    can hold: the material, the Idempotency-Key it goes out under (invariant 6) and who asked.
    The answer fills in `outcome` and `transfer_ref` (and a `transfers` row, polled to
    terminal). An intent still `pending` is a request whose answer was lost: sending the same
    material again reuses its key, and the gateway's replay names the transfer.
    """

    __tablename__ = "transfer_intents"
    __table_args__ = (Index("ix_transfer_intents_outcome_id", "outcome", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    idempotency_key: Mapped[uuid.UUID] = mapped_column(unique=True)
    #: The caller's own Idempotency-Key (`POST /transfers`), so its retries find this intent.
    client_key: Mapped[uuid.UUID | None] = mapped_column(unique=True)
    requested_via: Mapped[str] = mapped_column(String(16))
    source_account_ref: Mapped[uuid.UUID]
    source_endpoint_ref: Mapped[uuid.UUID]
    source_holding_ref: Mapped[uuid.UUID]
    dest_account_ref: Mapped[uuid.UUID]
    dest_endpoint_ref: Mapped[uuid.UUID]
    dest_holding_ref: Mapped[uuid.UUID]
    currency: Mapped[str] = mapped_column(String(8))
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    material_fingerprint: Mapped[str] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16), default="pending")
    transfer_ref: Mapped[uuid.UUID | None] = mapped_column(index=True)
    detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    answered_at: Mapped[datetime | None]


class OutboundRequest(Base):
    """Every write we send to the gateway, recorded before it goes out (invariant 6, docs/architecture.md)."""

    __tablename__ = "outbound_requests"
    __table_args__ = (
        Index("ix_outbound_requests_fingerprint", "operation", "material_fingerprint"),
        # Retention reads closed keys in the order they completed.
        Index("ix_outbound_requests_completed_at", "completed_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    idempotency_key: Mapped[uuid.UUID] = mapped_column(unique=True)
    operation: Mapped[str] = mapped_column(String(64))
    material_fingerprint: Mapped[str] = mapped_column(String(64))
    request_body: Mapped[dict[str, Any]]
    state: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    sent_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    response_status: Mapped[int | None] = mapped_column(Integer)
    result_ref: Mapped[str | None] = mapped_column(String(128))


class Delivery(Base):
    """The webhook inbox: exactly the bytes received, kept before the 2xx (invariant 1, docs/architecture.md)."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("delivery_id", "body_sha256"),
        Index("ix_deliveries_state_received", "state", "received_at"),
        # One first body per delivery id: the database itself tells a body re-sent under a
        # known id from a new delivery, even between concurrent writers (reconciliation/inbox).
        Index(
            "uq_deliveries_original_delivery_id",
            "delivery_id",
            unique=True,
            postgresql_where=text("original"),
            sqlite_where=text("original"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # No index of its own: the unique (delivery_id, body_sha256) index leads with it, and a
    # second index would only slow the receiver's inserts.
    delivery_id: Mapped[str] = mapped_column(String(255))
    body_sha256: Mapped[str] = mapped_column(String(64))
    body: Mapped[bytes] = mapped_column(LargeBinary)
    headers: Mapped[dict[str, Any]]
    scheme: Mapped[str] = mapped_column(String(32))
    event_type: Mapped[str | None] = mapped_column(String(64))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    processed_at: Mapped[datetime | None]
    # True for the first body the receiver stored under a delivery id, False for another body
    # re-sent under it (quarantined); NULL for rows written by other means.
    original: Mapped[bool | None] = mapped_column(Boolean)
    # Fingerprint of the delivery_not_understood alert while no payload shape reads this row;
    # cleared when a replay reads it, so the alert resolves once no row carries it.
    shape_problem: Mapped[str | None] = mapped_column(String(128), index=True)


class Notification(Base):
    """What a delivery claims, normalised: the provider's story, to be checked."""

    __tablename__ = "notifications"
    __table_args__ = (Index("ix_notifications_match_status_id", "match_status", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    delivery_pk: Mapped[int | None] = mapped_column(ForeignKey("deliveries.id"), unique=True)
    event_id: Mapped[str] = mapped_column(String(255), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    transfer_ref: Mapped[uuid.UUID | None] = mapped_column(index=True)
    receipt_ref: Mapped[uuid.UUID | None] = mapped_column(index=True)
    account_ref: Mapped[uuid.UUID | None]
    endpoint_ref: Mapped[uuid.UUID | None]
    holding_ref: Mapped[uuid.UUID | None]
    account_number: Mapped[str | None] = mapped_column(String(32), index=True)
    amount_minor: Mapped[int | None] = mapped_column(BigInteger)
    currency: Mapped[str | None] = mapped_column(String(8))
    claimed_status: Mapped[str | None] = mapped_column(String(32))
    narration: Mapped[str | None] = mapped_column(Text)
    occurred_at: Mapped[datetime]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    match_status: Mapped[str] = mapped_column(String(16), default=UNMATCHED)
    # The body's own id, as evidence only: `event_id` is the delivery id (the webhook-id
    # header), and a provider may send a message id there that differs from its event id.
    body_id: Mapped[str | None] = mapped_column(String(255))
    # Which payload shape read the body (upstream.webhooks.payloads), for whoever checks it.
    payload_shape: Mapped[str | None] = mapped_column(String(32))


class Match(Base):
    """Which posting, transfer and notification belong together, and by which rule.

    One transfer settles as several ledger legs, so one transfer appears in several rows, and so
    does the one notification that announced them; a posting appears in at most one active row.
    """

    __tablename__ = "matches"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    rule: Mapped[str] = mapped_column(String(32))
    # No foreign keys: rows are written set-wise from joins over existing items (which are never
    # deleted), and PostgreSQL's per-row FK triggers cost ~13 us each, three per row: 40 s of a
    # million-row pass. The indexes stay; they serve unmatching, attaching and the drift rules.
    posting_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    transfer_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    notification_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    matched_at: Mapped[datetime] = mapped_column(default=utcnow)
    matched_by: Mapped[str] = mapped_column(String(128), default="recon")
    reason: Mapped[str | None] = mapped_column(Text)
    unmatched_at: Mapped[datetime | None]
    unmatched_by: Mapped[str | None] = mapped_column(String(128))
    unmatch_reason: Mapped[str | None] = mapped_column(Text)


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


class Subscription(Base):
    """Our webhook registration at the company API, as last read."""

    __tablename__ = "subscriptions"

    id: Mapped[int] = mapped_column(primary_key=True)
    webhook_id: Mapped[str] = mapped_column(String(255), unique=True)
    url: Mapped[str] = mapped_column(Text)
    event_types: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16))
    description: Mapped[str | None] = mapped_column(Text)
    registered_by_recon: Mapped[bool] = mapped_column(Boolean, default=True)
    total_deliveries: Mapped[int] = mapped_column(BigInteger, default=0)
    successful_deliveries: Mapped[int] = mapped_column(BigInteger, default=0)
    failed_deliveries: Mapped[int] = mapped_column(BigInteger, default=0)
    last_triggered: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    checked_at: Mapped[datetime | None]
    # Set when `recon webhooks rotate` replaced this registration: its secret stays accepted
    # only for the overlap, and its failures are expected afterwards (not an alert).
    retired_at: Mapped[datetime | None]


class WebhookSecret(Base):
    """A signing secret the receiver accepts, encrypted at rest; several during a rotation."""

    __tablename__ = "webhook_secrets"

    id: Mapped[int] = mapped_column(primary_key=True)
    subscription_id: Mapped[int | None] = mapped_column(ForeignKey("subscriptions.id"), index=True)
    secret_encrypted: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    valid_until: Mapped[datetime | None]


class Lease(Base):
    """A named, expiring lock in the store (the scheduler's singleton, one-off jobs)."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime]


class Watermark(Base):
    """Progress markers of incremental passes (the highest row id a pass has looked at)."""

    __tablename__ = "watermarks"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


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
    settled_minor: Mapped[int] = mapped_column(BigInteger)
    posted_minor: Mapped[int] = mapped_column(BigInteger)
    drift_minor: Mapped[int] = mapped_column(BigInteger)
    explained_by_lag: Mapped[bool] = mapped_column(Boolean, default=False)
    # The highest posting id the posted sum has seen: the next check adds only what came after.
    postings_through_id: Mapped[int] = mapped_column(BigInteger, default=0)
    checked_at: Mapped[datetime] = mapped_column(default=utcnow)


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


class AuditEvent(Base):
    """One thing a person did through the operator console (or the CLI): who, what, why, when.

    Append-only: rows are never updated or deleted, so the table is the record an auditor reads.
    `subject` names what was acted on in words a person can search ("alert 12", "delivery 40").
    """

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_subject", "subject", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    reason: Mapped[str | None] = mapped_column(Text)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)


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
