"""Ask the gateway for a transfer and remember that we asked.

The gateway write takes its Idempotency-Key from the outbound-requests table (the client does
that), and the answer is recorded as a transfer of origin 'created' in the same store, so the
poller follows it to its terminal status and the reconciler knows we asked for it.
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.types import utcnow
from reconciliation.transfers.polling import record_created_transfer
from upstream.gateway import GatewayClient
from upstream.wire.transfers import (
    TransferAccepted,
    TransferCreation,
    TransferDenied,
    TransferRequest,
)


def request_transfer(
    gateway: GatewayClient, session_factory: sessionmaker[Session], request: TransferRequest
) -> TransferCreation:
    """Create the transfer at the gateway and track it; a replay finds the row already there."""
    creation = gateway.create_transfer(request)
    if isinstance(creation, (TransferAccepted, TransferDenied)):
        with session_factory.begin() as session:
            record_created_transfer(session, creation.transfer, utcnow())
    return creation
