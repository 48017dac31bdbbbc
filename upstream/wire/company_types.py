"""Company API shapes: its two success bodies, webhooks, name enquiry.

A webhook operation answers `{data}` (what the spec shows) or the full envelope
`{success, message, data, timestamp}` (what its errors and name enquiry use); either way the
payload is `data`, which is all `success_data` reads. Statuses are compared in upper case, the
spec's spelling, whatever case a provider sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec

from upstream.wire.reader import Fields

EVENT_TYPES = (
    "TRANSACTION_COMPLETED",
    "TRANSACTION_FAILED",
    "ACCOUNT_CREATED",
    "KYC_VERIFIED",
    "PAYMENT_RECEIVED",
)
WEBHOOK_STATUSES = ("ACTIVE", "INACTIVE", "SUSPENDED")


def success_data(top: Fields) -> Fields:
    """`data` of a success body, bare `{data}` or inside the full envelope alike."""
    return top.obj("data")


class WebhookRetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Delivery retry policy (field set per docs/decisions.md; the spec does not show it).

    A provider with other field names may ignore ours or refuse them; the client then registers
    without a policy (the provider's own schedule applies) rather than not at all.
    """

    max_attempts: int = 5
    initial_delay_seconds: float = 30.0
    backoff_multiplier: float = 2.0

    def to_wire(self) -> dict[str, object]:
        """The request form."""
        return {
            "maxAttempts": self.max_attempts,
            "initialDelaySeconds": self.initial_delay_seconds,
            "backoffMultiplier": self.backoff_multiplier,
        }


class WebhookRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A webhook registration. `secret` is sent once and never kept on any result or repr."""

    url: str
    event_types: Sequence[str]
    secret: str
    description: str | None = None
    is_active: bool = True
    retry_policy: WebhookRetryPolicy | None = None

    def __repr__(self) -> str:
        return (
            f"WebhookRequest(url={self.url!r}, event_types={list(self.event_types)!r}, "
            f"secret='***', is_active={self.is_active!r})"
        )

    def to_wire(self) -> dict[str, object]:
        """The request body, secret included (it is how deliveries get signed)."""
        body: dict[str, object] = {
            "url": self.url,
            "eventTypes": list(self.event_types),
            "secret": self.secret,
            "isActive": self.is_active,
        }
        if self.description is not None:
            body["description"] = self.description
        if self.retry_policy is not None:
            body["retryPolicy"] = self.retry_policy.to_wire()
        return body


class Webhook(msgspec.Struct, frozen=True, kw_only=True):
    """A registered webhook with its delivery counters."""

    webhook_id: str
    url: str
    event_types: tuple[str, ...]
    status: str
    created_at: datetime | None
    last_triggered: datetime | None
    total_deliveries: int | None
    successful_deliveries: int | None
    failed_deliveries: int | None
    description: str | None = None


def parse_webhook(f: Fields) -> Webhook:
    """Read one webhook."""
    return Webhook(
        webhook_id=f.text("webhookId"),
        url=f.text("url"),
        event_types=f.opt_texts("eventTypes"),
        status=f.text("status").upper(),
        created_at=f.opt_timestamp("createdAt"),
        last_triggered=f.opt_timestamp("lastTriggered"),
        total_deliveries=f.opt_integer("totalDeliveries"),
        successful_deliveries=f.opt_integer("successfulDeliveries"),
        failed_deliveries=f.opt_integer("failedDeliveries"),
        description=f.opt_text("description"),
    )


class WebhookList(msgspec.Struct, frozen=True, kw_only=True):
    """The webhook list with its counts."""

    webhooks: tuple[Webhook, ...]
    total_count: int | None
    active_count: int | None
    inactive_count: int | None


def parse_webhook_list(f: Fields) -> WebhookList:
    """Read `data` of the list."""
    return WebhookList(
        webhooks=tuple(parse_webhook(w) for w in f.objs("webhooks")),
        total_count=f.opt_integer("totalCount"),
        active_count=f.opt_integer("activeCount"),
        inactive_count=f.opt_integer("inactiveCount"),
    )


class NameEnquiry(msgspec.Struct, frozen=True, kw_only=True):
    """Name enquiry's answer; `data` is null for a test number and its shape is not shown."""

    success: bool
    message: str | None
    data: object | None
    timestamp: datetime | None


def parse_name_enquiry(f: Fields) -> NameEnquiry:
    """Read the whole envelope of a name enquiry."""
    return NameEnquiry(
        success=f.flag("success"),
        message=f.opt_text("message"),
        data=f.opt_raw("data"),
        timestamp=f.opt_timestamp("timestamp"),
    )
