"""Transfer intents: what we are about to ask the gateway for, and what it answered.

The gateway names a transfer only in its answer. If recon recorded transfers only from answers,
a process that died between sending and reading the answer would leave money reserved that
recon never follows: never polled, never matched, never overdue. So the intent is committed
first, under the Idempotency-Key the request goes out with (invariant 6), and the answer is
written against it. A `pending` intent is a request whose answer we do not know; sending the
same material again reuses its key and the gateway's replay names the transfer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.db import transaction
from reconciliation.store.models import Transfer, TransferIntent
from reconciliation.store.write_statements import insert_ignoring_conflicts
from reconciliation.transfers.fees import instruction_bearer, quoted_fee
from reconciliation.transfers.polling import ORIGIN_CREATED, record_created_transfer
from upstream import (
    TransferAccepted,
    TransferCreation,
    TransferDenied,
    TransferReplayed,
    TransferRequest,
    material_fingerprint,
)

#: Outcomes of an intent. `pending`: sent or about to be, answer unknown.
PENDING: Final = "pending"
RESERVED: Final = "reserved"
DENIED: Final = "denied"
REPLAYED: Final = "replayed"
#: The gateway refused the request for good (400, 404, 409): nothing was created.
REJECTED: Final = "rejected"

#: What a caller writes in a new intent's own transaction, given the session and the intent's
#: Idempotency-Key: the operator's audit row, committed with the decision it records.
WithIntent = Callable[[Session, uuid.UUID], None]


def intent_fingerprint(request: TransferRequest, accepted_quote: object = None) -> str:
    """The fingerprint of what we ask for: the request body as it goes out."""
    quote = dict(accepted_quote) if isinstance(accepted_quote, dict) else None
    return material_fingerprint(request.to_wire(quote))


def record_intent(
    factory: sessionmaker[Session],
    key: uuid.UUID,
    request: TransferRequest,
    *,
    via: str,
    fingerprint: str,
    client_key: uuid.UUID | None,
    now: datetime,
    accepted_quote: Mapping[str, Any] | None = None,
    with_intent: WithIntent | None = None,
) -> None:
    """Commit the intent under `key` before the request goes out; a resend finds it there.

    The fee's bearer (from the instruction) and the quoted fee (from `accepted_quote`) go with
    it, for the transfer row the answer makes. `with_intent` runs in the same transaction, and
    only when the intent is new: a resend under the same key is the same request, not another.
    """
    currency = str(request.value_unit)
    with transaction(factory) as session:
        inserted = session.scalar(
            insert_ignoring_conflicts(session, TransferIntent, ["idempotency_key"])
            .values(
                idempotency_key=key,
                client_key=client_key,
                requested_via=via,
                source_account_ref=request.source.account_ref,
                source_endpoint_ref=request.source.endpoint_ref,
                source_holding_ref=request.source.holding_ref,
                dest_account_ref=request.destination.account_ref,
                dest_endpoint_ref=request.destination.endpoint_ref,
                dest_holding_ref=request.destination.holding_ref,
                currency=currency,
                amount_minor=request.amount_minor_units,
                material_fingerprint=fingerprint,
                fee_bearer=instruction_bearer(request),
                fee_quoted_minor=quoted_fee(accepted_quote, currency),
                outcome=PENDING,
                created_at=now,
            )
            .returning(TransferIntent.id)
        )
        if inserted is not None and with_intent is not None:
            with_intent(session, key)


def intent_of_client_key(
    factory: sessionmaker[Session], client_key: uuid.UUID
) -> TransferIntent | None:
    """The intent a caller's own Idempotency-Key already names, if any."""
    with factory() as session:
        intent = session.scalars(
            select(TransferIntent).where(TransferIntent.client_key == client_key)
        ).first()
        if intent is not None:
            session.expunge(intent)
        return intent


def record_answer(factory: sessionmaker[Session], creation: TransferCreation, now: datetime) -> str:
    """Write the gateway's answer against its intent and follow the transfer; the outcome.

    One transaction: the intent's outcome and the transfer row (polled until terminal) appear
    together. A replay after a lost answer finds no transfer row yet: it is made from the
    intent's material, with no stage or status until the poller reads them.
    """
    with transaction(factory) as session:
        match creation:
            case TransferAccepted() | TransferDenied():
                record_created_transfer(session, creation.transfer, now)
                outcome = RESERVED if isinstance(creation, TransferAccepted) else DENIED
            case TransferReplayed():
                _follow_replayed(session, creation, now)
                outcome = REPLAYED
        session.execute(
            update(TransferIntent)
            .where(TransferIntent.idempotency_key == creation.idempotency_key)
            .values(outcome=outcome, transfer_ref=creation.transfer_ref, answered_at=now)
        )
        _copy_fee_terms(session, creation.idempotency_key, creation.transfer_ref)
    return outcome


def _copy_fee_terms(session: Session, key: uuid.UUID, transfer_ref: uuid.UUID) -> None:
    """The bearer and quoted fee the intent was sent with, onto its transfer row (the status
    reads fill in the fee charged; a bearer they name never replaces the one we asked for)."""
    intent = session.execute(
        select(TransferIntent.fee_bearer, TransferIntent.fee_quoted_minor).where(
            TransferIntent.idempotency_key == key
        )
    ).first()
    if intent is None or (intent.fee_bearer is None and intent.fee_quoted_minor is None):
        return
    session.execute(
        update(Transfer)
        .where(Transfer.transfer_ref == transfer_ref)
        .values(fee_bearer=intent.fee_bearer, fee_quoted_minor=intent.fee_quoted_minor)
    )


def record_refusal(
    factory: sessionmaker[Session], key: uuid.UUID, detail: str, now: datetime
) -> None:
    """The gateway refused the request for good: the intent says why, and nothing is followed."""
    with transaction(factory) as session:
        session.execute(
            update(TransferIntent)
            .where(TransferIntent.idempotency_key == key, TransferIntent.outcome == PENDING)
            .values(outcome=REJECTED, detail=detail, answered_at=now)
        )


def _follow_replayed(session: Session, creation: TransferReplayed, now: datetime) -> None:
    """Make sure the transfer a replay names is followed (its first answer may have been lost)."""
    known = session.scalar(
        select(Transfer.id).where(Transfer.transfer_ref == creation.transfer_ref)
    )
    if known is not None:
        return
    intent = session.scalars(
        select(TransferIntent).where(TransferIntent.idempotency_key == creation.idempotency_key)
    ).first()
    if intent is None:
        # A replay for a key recorded by an older recon (no intent): follow the ref alone.
        values: dict[str, Any] = {}
    else:
        values = {
            "source_account_ref": intent.source_account_ref,
            "source_endpoint_ref": intent.source_endpoint_ref,
            "source_holding_ref": intent.source_holding_ref,
            "dest_account_ref": intent.dest_account_ref,
            "dest_endpoint_ref": intent.dest_endpoint_ref,
            "dest_holding_ref": intent.dest_holding_ref,
            "currency": intent.currency,
            "amount_minor": intent.amount_minor,
            "requested_at": intent.created_at,
        }
    # No stage or status yet: the poller's first read (due now) records them, with a change.
    session.execute(
        insert_ignoring_conflicts(session, Transfer, ["transfer_ref"]).values(
            transfer_ref=creation.transfer_ref,
            origin=ORIGIN_CREATED,
            is_terminal=False,
            next_poll_at=now,
            poll_attempts=0,
            created_at=now,
            updated_at=now,
            **values,
        )
    )
