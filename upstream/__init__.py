"""Typed, resilient clients for the provider's transfer gateway and company API.

`GatewayClient` and `CompanyClient` are sync httpx clients (callers are worker threads and a
CLI). Every failure is one of the exceptions in `upstream.errors`; every gateway write takes its
Idempotency-Key from an `IdempotencyKeys` implementation that records it before sending.
"""

from upstream.activity import ActivityCursor, ActivityPage
from upstream.company import CompanyClient
from upstream.errors import (
    CallInfo,
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidInput,
    NotFound,
    ProtocolError,
    ProviderError,
    RateLimited,
    StaleGuard,
    Unauthorized,
    Unavailable,
)
from upstream.gateway import GatewayClient
from upstream.idempotency import IdempotencyKeys, MemoryIdempotencyKeys, Outcome
from upstream.retry import NO_RETRY, RetryPolicy
from upstream.wire.balances import BalanceSnapshot, CreditRequest, Posting, Simulation
from upstream.wire.common import Destination, HoldingAddress, Result, ValueUnit
from upstream.wire.company_types import NameEnquiry, Webhook, WebhookList, WebhookRequest
from upstream.wire.endpoints import EndpointRequest, LifecycleGuard
from upstream.wire.evidence import Evidence
from upstream.wire.receiving import ReceivingRequest
from upstream.wire.transfers import (
    Stage,
    TransferAccepted,
    TransferCreation,
    TransferDenied,
    TransferReplayed,
    TransferRequest,
)

__all__ = [
    "NO_RETRY",
    "ActivityCursor",
    "ActivityPage",
    "BalanceSnapshot",
    "CallInfo",
    "CompanyClient",
    "Conflict",
    "CreditRequest",
    "Destination",
    "EndpointRequest",
    "Evidence",
    "Forbidden",
    "GatewayClient",
    "HoldingAddress",
    "IdempotencyConflict",
    "IdempotencyKeys",
    "InvalidInput",
    "LifecycleGuard",
    "MemoryIdempotencyKeys",
    "NameEnquiry",
    "NotFound",
    "Outcome",
    "Posting",
    "ProtocolError",
    "ProviderError",
    "RateLimited",
    "ReceivingRequest",
    "Result",
    "RetryPolicy",
    "Simulation",
    "Stage",
    "StaleGuard",
    "TransferAccepted",
    "TransferCreation",
    "TransferDenied",
    "TransferReplayed",
    "TransferRequest",
    "Unauthorized",
    "Unavailable",
    "ValueUnit",
    "Webhook",
    "WebhookList",
    "WebhookRequest",
]
