"""Sandbox configuration, the capability names, and the one wire timestamp format.

Everything a test or benchmark may want to bend (keys, delays, lags, retry schedule, signature
scheme, seed) is a field here, so a scenario is fully described by one ``SandboxConfig``.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from sandbox.variants import ProviderVariant, variant_from_environment

if TYPE_CHECKING:  # sandbox.fees renders through sandbox.events, which imports this module
    from sandbox.fees import FeeSchedule

# Capabilities named per operation in gateway-api.md section 4.
TRANSFER_CREATE = "TransferCreate"
TRANSFER_QUOTE_READ = "TransferQuoteRead"
TRANSFER_STATUS_READ = "TransferStatusRead"
ENDPOINT_CREATE = "ProgrammableEndpointCreate"
ENDPOINT_LIST = "ProgrammableEndpointList"
ENDPOINT_READ = "ProgrammableEndpointRead"
ENDPOINT_LIFECYCLE = "ProgrammableEndpointLifecycleManage"
RECEIVING_CREATE = "ReceivingEndpointCreate"
RECEIVING_READ = "ReceivingEndpointRead"
ENVIRONMENT_READ = "EnvironmentStatusRead"
BALANCE_READ = "BalanceSnapshotRead"
ACTIVITY_READ = "BalancePostedActivityRead"
INBOUND_CREDIT_CREATE = "SandboxInboundCreditSimulationCreate"

# Gated fee features of transfer create and quote.
FEE_APP_FEE = "TransferAppFeeInstructionRequest"
FEE_APPLICATION_PAYS = "TransferApplicationPaysAppFeeInstructionRequest"
FEE_RECEIVER_PAYS = "TransferReceiverPaysAppFeeInstructionRequest"
FEE_SPLIT = "TransferSplitAppFeeInstructionRequest"
FEE_EXTERNAL_COST_GUARD = "TransferExternalCostGuardRequest"

OPERATION_CAPABILITIES: frozenset[str] = frozenset(
    {
        TRANSFER_CREATE,
        TRANSFER_QUOTE_READ,
        TRANSFER_STATUS_READ,
        ENDPOINT_CREATE,
        ENDPOINT_LIST,
        ENDPOINT_READ,
        ENDPOINT_LIFECYCLE,
        RECEIVING_CREATE,
        RECEIVING_READ,
        ENVIRONMENT_READ,
        BALANCE_READ,
        ACTIVITY_READ,
        INBOUND_CREDIT_CREATE,
    }
)
FEATURE_CAPABILITIES: frozenset[str] = frozenset(
    {FEE_APP_FEE, FEE_APPLICATION_PAYS, FEE_RECEIVER_PAYS, FEE_SPLIT, FEE_EXTERNAL_COST_GUARD}
)
ALL_CAPABILITIES: frozenset[str] = OPERATION_CAPABILITIES | FEATURE_CAPABILITIES

SANDBOX_KEY_PREFIX = "ak_test_"
DEFAULT_GATEWAY_KEY = "ak_test_recon"
DEFAULT_COMPANY_KEY = "ck_test_recon"
DEFAULT_APP_ID = "6f1c2a34-0000-4000-8000-00000000c0de"

SignatureScheme = Literal[
    "standard",
    "ed25519",
    "hmac-sha256-hex",
    "hmac-sha256-base64",
    "hmac-sha512-hex",
    "hmac-sha512-base64",
]
SIGNATURE_SCHEMES: tuple[str, ...] = (
    "standard",
    "ed25519",
    "hmac-sha256-hex",
    "hmac-sha256-base64",
    "hmac-sha512-hex",
    "hmac-sha512-base64",
)


def _default_keys() -> dict[str, frozenset[str]]:
    return {DEFAULT_GATEWAY_KEY: ALL_CAPABILITIES}


@dataclasses.dataclass
class SandboxConfig:
    """One scenario's knobs; defaults match docs/decisions.md and a quick local run."""

    gateway_keys: dict[str, frozenset[str]] = dataclasses.field(default_factory=_default_keys)
    company_api_key: str = DEFAULT_COMPANY_KEY
    company_app_id: str = DEFAULT_APP_ID
    environment_kind: str = "DemoSandbox"
    environment_display_name: str = "recon sandbox"
    # The spec shows parts a demo shell hides; this sandbox serves all of them, so none by default.
    environment_unavailable_parts: tuple[str, ...] = ()
    organisation_ref: str = "6f1c2a34-0000-4000-8000-0000000000a1"
    environment_ref: str = "6f1c2a34-0000-4000-8000-0000000000e1"

    # Transfers: seconds from reservation to the terminal outcome, and how the outcome is chosen
    # when the control API has not fixed it (probability that the rail rejects).
    transfer_finality_delay_seconds: float = 2.0
    transfer_failure_probability: float = 0.0

    # Inbound credit: seconds from acceptance (EvidencePublished) to the ledger posting.
    inbound_posting_delay_seconds: float = 0.1
    # Balance snapshots trail the ledger postings by this much.
    projection_lag_seconds: float = 0.5

    # Webhook delivery.
    delivery_retry_schedule: tuple[float, ...] = (1.0, 5.0, 30.0, 120.0)
    # Scales the delays of a webhook's own retryPolicy (tests shrink them).
    retry_policy_time_scale: float = 1.0
    delivery_timeout_seconds: float = 5.0
    suspend_after_failures: int = 20
    signature_scheme: SignatureScheme = "standard"
    signature_header: str = "X-Signature"
    delivery_workers: int = 4
    # The delivery log and the event log keep this many of their latest entries each: a
    # sandbox left running for days would otherwise hold every body it ever sent.
    delivery_log_limit: int = 10_000

    # Every choice the specs leave "not shown" (sandbox/variants.py): RECON_SANDBOX_VARIANT, or
    # our first guesses when unset.
    variant: ProviderVariant = dataclasses.field(default_factory=variant_from_environment)
    # Fees charged on transfers (sandbox/fees.py); None charges none, as the spec's
    # `no_configured_fee`. The control API replaces it at runtime; a reset restores this one.
    fee_schedule: FeeSchedule | None = None

    seed: int = 1
    # Run finality, projection and delivery in a background thread; off for step-by-step tests
    # that drive ``state.run_due()`` themselves.
    run_background: bool = True
    background_tick_seconds: float = 0.01

    idempotency_retention_seconds: float = 24 * 3600.0
    # Page size of an activity read that names none (never above the variant's page_cap).
    activity_page_default: int = 50
    endpoint_page_default: int = 50
    endpoint_page_max: int = 100


# --- the one timestamp format -------------------------------------------------------------

_TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def format_timestamp(epoch_ms: int) -> str:
    """ISO 8601 UTC, millisecond precision, ``Z`` suffix: the only timestamp form on the wire."""
    seconds, millis = divmod(epoch_ms, 1000)
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def parse_timestamp(text: str) -> int | None:
    """Inverse of ``format_timestamp``; ``None`` for anything not in exactly that form.

    Cursor parts must come back byte-for-byte as issued, so a looser parser would hide a client
    that rebuilds cursors instead of resuming them.
    """
    if not _TS_RE.match(text):
        return None
    try:
        moment = datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(moment.timestamp()) * 1000 + int(text[20:23])
