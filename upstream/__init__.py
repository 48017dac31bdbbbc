"""Typed, resilient clients for the provider's transfer gateway and company API.

`GatewayClient` and `CompanyClient` are sync httpx clients (callers are worker threads and a
CLI). Every failure is one of the exceptions in `upstream.errors`; every gateway write takes its
Idempotency-Key from an `IdempotencyKeys` implementation that records it before sending.
"""

from upstream.activity import (
    FROM_ENTRY,
    FROM_GATEWAY,
    MAX_PAGE_SIZE,
    OLDEST_FIRST,
    ActivityCursor,
    ActivityPage,
    CursorSource,
)
from upstream.activity_walk import ActivityReader, PagingTerms, ReadPosition
from upstream.company import TEST_ACCOUNT_NUMBER, CompanyClient
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
from upstream.gateway import RESUME_REASONS, SUSPEND_REASONS, GatewayClient
from upstream.idempotency import (
    IdempotencyKeys,
    MemoryIdempotencyKeys,
    Outcome,
    canonical_json,
    material_fingerprint,
)
from upstream.retry import NO_RETRY, RetryPolicy
from upstream.signatures import (
    BAD_SIGNATURE,
    SignatureError,
    VerifiedSignature,
    Verifier,
    make_verifier,
)
from upstream.signatures.factory import key_problem
from upstream.signatures.keys import new_secret
from upstream.transport import DEFAULT_LIMITS, DEFAULT_TIMEOUT, parse_retry_after
from upstream.webhooks.payloads import (
    MONEY_EVENTS,
    DeliveryNotification,
    DeliveryNotUnderstood,
    PayloadReader,
    configured_reader,
    reader_for,
)
from upstream.wire.balances import BalanceSnapshot, CreditRequest, Posting, Simulation
from upstream.wire.common import Destination, HoldingAddress, Result, ValueUnit
from upstream.wire.company_types import (
    EVENT_TYPES,
    NameEnquiry,
    Webhook,
    WebhookList,
    WebhookRequest,
    WebhookRetryPolicy,
)
from upstream.wire.endpoints import (
    Endpoint,
    EndpointRequest,
    EndpointRow,
    LifecycleApplied,
    LifecycleGuard,
    Locator,
)
from upstream.wire.evidence import Evidence
from upstream.wire.fees import (
    APPLICATION_PAYS,
    BEARERS,
    RECEIVER_PAYS,
    SENDER_PAYS,
    SPLIT,
    bearer_of,
    fee_instruction,
    posting_refs,
    read_fees,
)
from upstream.wire.receiving import ReceivingRequest
from upstream.wire.replays import WriteReplayed
from upstream.wire.transfers import (
    Fees,
    Quote,
    Stage,
    Status,
    Transfer,
    TransferAccepted,
    TransferCreation,
    TransferDenied,
    TransferReplayed,
    TransferRequest,
    TransferStatus,
)

__all__ = [
    "APPLICATION_PAYS",
    "BAD_SIGNATURE",
    "BEARERS",
    "DEFAULT_LIMITS",
    "DEFAULT_TIMEOUT",
    "EVENT_TYPES",
    "FROM_ENTRY",
    "FROM_GATEWAY",
    "MAX_PAGE_SIZE",
    "MONEY_EVENTS",
    "NO_RETRY",
    "OLDEST_FIRST",
    "RECEIVER_PAYS",
    "RESUME_REASONS",
    "SENDER_PAYS",
    "SPLIT",
    "SUSPEND_REASONS",
    "TEST_ACCOUNT_NUMBER",
    "ActivityCursor",
    "ActivityPage",
    "ActivityReader",
    "BalanceSnapshot",
    "CallInfo",
    "CompanyClient",
    "Conflict",
    "CreditRequest",
    "CursorSource",
    "DeliveryNotUnderstood",
    "DeliveryNotification",
    "Destination",
    "Endpoint",
    "EndpointRequest",
    "EndpointRow",
    "Evidence",
    "Fees",
    "Forbidden",
    "GatewayClient",
    "HoldingAddress",
    "IdempotencyConflict",
    "IdempotencyKeys",
    "InvalidInput",
    "LifecycleApplied",
    "LifecycleGuard",
    "Locator",
    "MemoryIdempotencyKeys",
    "NameEnquiry",
    "NotFound",
    "Outcome",
    "PagingTerms",
    "PayloadReader",
    "Posting",
    "ProtocolError",
    "ProviderError",
    "Quote",
    "RateLimited",
    "ReadPosition",
    "ReceivingRequest",
    "Result",
    "RetryPolicy",
    "SignatureError",
    "Simulation",
    "Stage",
    "StaleGuard",
    "Status",
    "Transfer",
    "TransferAccepted",
    "TransferCreation",
    "TransferDenied",
    "TransferReplayed",
    "TransferRequest",
    "TransferStatus",
    "Unauthorized",
    "Unavailable",
    "ValueUnit",
    "VerifiedSignature",
    "Verifier",
    "Webhook",
    "WebhookList",
    "WebhookRequest",
    "WebhookRetryPolicy",
    "WriteReplayed",
    "bearer_of",
    "canonical_json",
    "configured_reader",
    "fee_instruction",
    "key_problem",
    "make_verifier",
    "material_fingerprint",
    "new_secret",
    "parse_retry_after",
    "posting_refs",
    "read_fees",
    "reader_for",
]
