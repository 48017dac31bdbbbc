"""Company API shapes: its two success bodies, webhooks, name enquiry.

A webhook operation answers `{data}` (what the spec shows) or the full envelope
`{success, message, data, timestamp}` (what its errors and name enquiry use); either way the
payload is `data`, which is all `success_data` reads. Statuses are compared in upper case, the
spec's spelling, whatever case a provider sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import msgspec

from upstream.wire.decoding import Timestamp

T = TypeVar("T")

EVENT_TYPES = (
    "TRANSACTION_COMPLETED",
    "TRANSACTION_FAILED",
    "ACCOUNT_CREATED",
    "KYC_VERIFIED",
    "PAYMENT_RECEIVED",
)
WEBHOOK_STATUSES = ("ACTIVE", "INACTIVE", "SUSPENDED")


class Success(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """A success body, bare `{data}` or the full envelope alike: only `data` is read."""

    data: T


class SuccessFlag(msgspec.Struct, frozen=True):
    """What every company answer is checked for: `success: false`, even on a 200, refuses."""

    success: bool | None = None


class WebhookRetryPolicy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Delivery retry policy (field set per docs/decisions.md; the spec does not show it).

    A provider with other field names may ignore ours or refuse them; the client then registers
    without a policy (the provider's own schedule applies) rather than not at all.
    """

    max_attempts: int = 5
    initial_delay_seconds: float = 30.0
    backoff_multiplier: float = 2.0

    def to_wire(self) -> dict[str, object]:
        """The request form."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


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


class Webhook(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A registered webhook with its delivery counters; `status` in upper case."""

    webhook_id: str
    url: str
    status: str
    event_types: tuple[str, ...] = ()
    created_at: Timestamp | None = None
    last_triggered: Timestamp | None = None
    total_deliveries: int | None = None
    successful_deliveries: int | None = None
    failed_deliveries: int | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "status", self.status.upper())


class WebhookList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The webhook list with its counts."""

    webhooks: tuple[Webhook, ...]
    total_count: int | None = None
    active_count: int | None = None
    inactive_count: int | None = None


class NameEnquiry(msgspec.Struct, frozen=True, kw_only=True):
    """Name enquiry's whole envelope; `data` is null for a test number and its shape is not
    shown."""

    success: bool
    message: str | None = None
    data: Any = None
    timestamp: Timestamp | None = None
