"""Ask the gateway for a transfer, or start following one: the one service every caller uses.

`recon transfer create`, `POST /transfers` (both through reconciliation.operator, which adds
the person's audit row to the intent's transaction) and the demo all call `request_transfer`,
so a transfer recon asks for is always recorded the same way: the intent before the request
goes out (reconciliation.transfers.intents), then the gateway's answer, and a transfer row the
poller follows to terminal. `track_transfer` (`recon transfer track`, `POST
/transfers/{ref}/track`, through reconciliation.operator too) follows a transfer created
elsewhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.db import transaction
from reconciliation.store.models import Transfer, TransferIntent
from reconciliation.store.types import utcnow
from reconciliation.transfers.intents import (
    PENDING,
    REJECTED,
    WithIntent,
    intent_fingerprint,
    intent_of_client_key,
    record_answer,
    record_intent,
    record_refusal,
)
from reconciliation.transfers.polling import record_imported_transfer
from upstream import (
    Conflict,
    GatewayClient,
    InvalidInput,
    NotFound,
    TransferCreation,
    TransferDenied,
    TransferRequest,
)


class ClientKeyReusedError(ValueError):
    """A caller's Idempotency-Key already names a different transfer request."""


class PreviouslyRefusedError(ValueError):
    """A caller's Idempotency-Key names a request the gateway refused for good (say why)."""


@dataclass(frozen=True, slots=True)
class RequestedTransfer:
    """What became of a transfer request: `reserved`, `denied` or `replayed`.

    `creation` is the gateway's answer to this call; it is None when the answer came from the
    store (the caller's Idempotency-Key named a request already answered).
    """

    outcome: str
    transfer_ref: uuid.UUID
    idempotency_key: uuid.UUID
    creation: TransferCreation | None

    @property
    def denial_reason(self) -> str | None:
        """The gateway's `denialReason` when it denied this call's request."""
        return self.creation.reason if isinstance(self.creation, TransferDenied) else None


def request_transfer(
    gateway: GatewayClient,
    session_factory: sessionmaker[Session],
    request: TransferRequest,
    *,
    via: str = "demo",
    client_key: uuid.UUID | None = None,
    accepted_quote: Mapping[str, Any] | None = None,
    with_intent: WithIntent | None = None,
) -> RequestedTransfer:
    """Record the intent, send the create, record the answer; the transfer is then followed.

    `via` names who asked (`cli`, `api`, `demo`). With `client_key` (the caller's own
    Idempotency-Key) a request already answered is answered again from the store, without a
    second transfer; one still pending is sent again under its recorded key, so the gateway
    replays it. A final refusal (400, 404, 409) is recorded on the intent and raised.
    `with_intent` is written in the transaction of a new intent (intents.record_intent).
    """
    fingerprint = intent_fingerprint(request, accepted_quote)
    if client_key is not None:
        earlier = intent_of_client_key(session_factory, client_key)
        if earlier is not None:
            if earlier.material_fingerprint != fingerprint:
                raise ClientKeyReusedError(
                    f"Idempotency-Key {client_key} was already used for a different transfer "
                    "request; send the original request under it, or this one under a new key"
                )
            if earlier.outcome != PENDING:
                return _from_store(earlier)
    sent_under: list[uuid.UUID] = []

    def record(key: uuid.UUID) -> None:
        sent_under.append(key)
        record_intent(
            session_factory,
            key,
            request,
            via=via,
            fingerprint=fingerprint,
            client_key=client_key,
            now=utcnow(),
            accepted_quote=accepted_quote,
            with_intent=with_intent,
        )

    try:
        creation = gateway.create_transfer(
            request, accepted_quote=accepted_quote, before_send=record
        )
    except (InvalidInput, NotFound, Conflict) as exc:
        if sent_under:
            record_refusal(session_factory, sent_under[0], str(exc), utcnow())
        raise
    outcome = record_answer(session_factory, creation, utcnow())
    return RequestedTransfer(
        outcome=outcome,
        transfer_ref=creation.transfer_ref,
        idempotency_key=creation.idempotency_key,
        creation=creation,
    )


def _from_store(intent: TransferIntent) -> RequestedTransfer:
    if intent.outcome == REJECTED or intent.transfer_ref is None:
        raise PreviouslyRefusedError(
            f"this request was refused by the gateway earlier: {intent.detail or 'no detail'}; "
            "correct it and send it under a new Idempotency-Key"
        )
    return RequestedTransfer(
        outcome=intent.outcome,
        transfer_ref=intent.transfer_ref,
        idempotency_key=intent.idempotency_key,
        creation=None,
    )


@dataclass(frozen=True, slots=True)
class TrackedTransfer:
    """A transfer now followed: how we knew it, and where it stood when asked."""

    transfer_ref: uuid.UUID
    origin: str
    newly_tracked: bool
    status: str | None
    is_terminal: bool
    is_successful: bool | None


#: What a caller writes in the transaction that starts (or brings forward) following a
#: transfer, given what became of it: the operator's audit row, committed with the change.
WithTracked = Callable[[Session, TrackedTransfer], None]


def track_transfer(
    gateway: GatewayClient,
    session_factory: sessionmaker[Session],
    transfer_ref: uuid.UUID,
    *,
    with_tracked: WithTracked | None = None,
) -> TrackedTransfer:
    """Follow `transfer_ref` until terminal: read its status once, then leave it to the poller.

    A transfer already followed (whatever its origin) is only brought forward to be polled
    now, and not read. An unknown reference raises NotFound from the status read, and nothing
    is stored. One transaction makes the change and writes `with_tracked`.
    """
    with session_factory() as session:
        known = session.scalar(select(Transfer.id).where(Transfer.transfer_ref == transfer_ref))
    status = None if known is not None else gateway.transfer_status(transfer_ref).value
    with transaction(session_factory) as session:
        if status is None:
            newly = False
            session.execute(
                update(Transfer)
                .where(Transfer.id == known, Transfer.is_terminal.is_(False))
                .values(next_poll_at=utcnow())
            )
        else:
            newly = record_imported_transfer(session, status, utcnow())
        row = session.scalars(select(Transfer).where(Transfer.transfer_ref == transfer_ref)).one()
        tracked = _tracked(row, newly=newly)
        if with_tracked is not None:
            with_tracked(session, tracked)
    return tracked


def _tracked(row: Transfer, *, newly: bool) -> TrackedTransfer:
    return TrackedTransfer(
        transfer_ref=row.transfer_ref,
        origin=row.origin,
        newly_tracked=newly,
        status=row.status,
        is_terminal=row.is_terminal,
        is_successful=row.is_successful,
    )


__all__ = [
    "ClientKeyReusedError",
    "PreviouslyRefusedError",
    "RequestedTransfer",
    "TrackedTransfer",
    "WithTracked",
    "request_transfer",
    "track_transfer",
]
