"""The requests stream: what we asked the provider to do.

Every write we send is recorded with its Idempotency-Key before it goes out; transfers we
created, were told of or track are polled until their status is terminal.
"""

from reconciliation.transfers.intents import DENIED, RESERVED
from reconciliation.transfers.outbound import StoreIdempotencyKeys
from reconciliation.transfers.polling import (
    Backoff,
    TransferLegs,
    claim_due_transfers,
    record_poll_failure,
    record_status,
    release_claims,
    transfer_legs,
)
from reconciliation.transfers.requests import (
    ClientKeyReusedError,
    PreviouslyRefusedError,
    RequestedTransfer,
    TrackedTransfer,
    request_transfer,
)

__all__ = [
    "DENIED",
    "RESERVED",
    "Backoff",
    "ClientKeyReusedError",
    "PreviouslyRefusedError",
    "RequestedTransfer",
    "StoreIdempotencyKeys",
    "TrackedTransfer",
    "TransferLegs",
    "claim_due_transfers",
    "record_poll_failure",
    "record_status",
    "release_claims",
    "request_transfer",
    "transfer_legs",
]
