"""The claims stream's tables: the webhook inbox of raw deliveries, the notifications they
become, and our webhook registration with its sealed secrets.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from reconciliation.store.models.base import UNMATCHED, Base
from reconciliation.store.types import UNIT_CODE_LENGTH, Amount, BigId, utcnow


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
    __table_args__ = (
        Index("ix_notifications_match_status_id", "match_status", "id"),
        # One holding's notifications in a window: the console's and a report's per-holding read.
        Index("ix_notifications_holding_occurred", "holding_ref", "occurred_at"),
    )

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
    amount_minor: Mapped[int | None] = mapped_column(Amount())
    currency: Mapped[str | None] = mapped_column(String(UNIT_CODE_LENGTH))
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
