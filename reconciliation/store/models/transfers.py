"""The requests stream's tables: transfers and their status history, transfer intents, and
every write we send with its Idempotency-Key.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from reconciliation.store.models.base import UNMATCHED, Base
from reconciliation.store.types import UNIT_CODE_LENGTH, Amount, BigId, utcnow


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
        # One holding's transfers (the console's and a report's per-holding read): about a
        # thousand rows a holding even at a million transfers, then filtered by the window.
        Index("ix_transfers_source_holding", "source_holding_ref"),
        # The few transfers created against an accepted quote: the fee_mismatch rule reads
        # only these, not every transfer.
        Index(
            "ix_transfers_fee_quoted",
            "id",
            postgresql_where=text("fee_quoted_minor IS NOT NULL"),
            sqlite_where=text("fee_quoted_minor IS NOT NULL"),
        ),
        # The few transfers whose fee changed since a pass last added up their legs: the
        # amount_mismatch rule re-checks only these, never every transfer.
        Index(
            "ix_transfers_fee_unchecked",
            "id",
            postgresql_where=text("fee_revision <> fee_checked_revision"),
            sqlite_where=text("fee_revision <> fee_checked_revision"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    transfer_ref: Mapped[uuid.UUID] = mapped_column(unique=True)
    source_account_ref: Mapped[uuid.UUID | None]
    source_endpoint_ref: Mapped[uuid.UUID | None]
    source_holding_ref: Mapped[uuid.UUID | None]
    dest_account_ref: Mapped[uuid.UUID | None]
    dest_endpoint_ref: Mapped[uuid.UUID | None]
    dest_holding_ref: Mapped[uuid.UUID | None]
    currency: Mapped[str | None] = mapped_column(String(UNIT_CODE_LENGTH))
    amount_minor: Mapped[int | None] = mapped_column(Amount())
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
    #: The fee in the transfer's unit as the latest status read said it (its `fees` totals
    #: added up); None until read, or when an element could not be read (`fee_evidence`).
    fee_charged_minor: Mapped[int | None] = mapped_column(Amount())
    #: Who pays it (upstream.wire.fees.BEARERS): the instruction recon sent, else the words of
    #: the fee lines; None when neither says.
    fee_bearer: Mapped[str | None] = mapped_column(String(32))
    #: The fee's kind as its totals name it (`mixed` for several); None when unnamed.
    fee_kind: Mapped[str | None] = mapped_column(String(64))
    #: The provider's fee status word, verbatim (never interpreted).
    fee_status: Mapped[str | None] = mapped_column(String(64))
    #: The fee in the accepted quote recon created the transfer against; None without one.
    fee_quoted_minor: Mapped[int | None] = mapped_column(Amount())
    #: The status read's `fees` object as it came, and the elements that could not be read.
    fee_evidence: Mapped[dict[str, Any] | None]
    #: Bumped by the poller in the same transaction as any change of the fee columns above.
    fee_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: The `fee_revision` a pass last added this transfer's legs up against. A counter pair,
    #: not a time or an id watermark: a status read committed after a pass's snapshot but
    #: stamped before it still leaves the two unequal, so the next pass re-checks the group.
    fee_checked_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class TransferChange(Base):
    """Each stage, status or revision change we observed, for the audit trail.

    It carries what the status read meant too (`is_terminal`, `is_successful`: recon decides
    from these, never from the status's name), so the transfer as it stood at any moment can be
    told from its history: a rebuild judges a transfer that changed after the live pass as that
    pass saw it. NULL in both: a change recorded before they were kept (a transfer is polled
    only until terminal, so such a change was not terminal unless it is the transfer's last).
    """

    __tablename__ = "transfer_changes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    transfer_id: Mapped[int] = mapped_column(ForeignKey("transfers.id"), index=True)
    observed_at: Mapped[datetime] = mapped_column(default=utcnow)
    stage: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(String(64))
    revision: Mapped[int | None] = mapped_column(Integer)
    is_terminal: Mapped[bool | None] = mapped_column(Boolean)
    is_successful: Mapped[bool | None] = mapped_column(Boolean)


class TransferFeeReceipt(Base):
    """A receipt or line ref a transfer's fee lines or evidence name: where the provider says
    it posted the fee, when that is not the transfer's own receipt.

    Kept apart from `fee_evidence` (JSON, read in every shape) so that matching finds a fee
    leg's transfer through an index, one join over the new postings, never by reading JSON.
    Replaced whenever a status read changes the transfer's fee. No foreign key, as `matches`.
    """

    __tablename__ = "transfer_fee_receipts"

    ref: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    transfer_id: Mapped[int] = mapped_column(BigId, primary_key=True)


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
    currency: Mapped[str] = mapped_column(String(UNIT_CODE_LENGTH))
    amount_minor: Mapped[int] = mapped_column(Amount())
    material_fingerprint: Mapped[str] = mapped_column(String(64))
    #: The bearer of the fee instruction sent, and the fee of the accepted quote sent (its
    #: totals in the transfer's unit): copied onto the transfer when the gateway answers.
    fee_bearer: Mapped[str | None] = mapped_column(String(32))
    fee_quoted_minor: Mapped[int | None] = mapped_column(Amount())
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
