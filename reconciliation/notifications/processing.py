"""From inbox delivery to notification: what the provider claims, normalised and exact.

The receiver stored each delivery's exact bytes before answering 2xx (invariant 1, docs/architecture.md); this module
turns those bytes into a `Notification` row: refs as UUIDs, the major-unit decimal amount as
exact integer minor units (foundation.money, never a float), the account number, and the
claim's time. The transfer a notification names is recorded so the transfer poller asks the
gateway for its truth. Claiming the delivery, writing the notification, recording the transfer
and marking the delivery processed happen in one transaction, so a crash leaves either all of
it or none.

A body that cannot be read is quarantined with a message saying what was wrong; its bytes stay
in the inbox untouched, so nothing is lost and it can be replayed once the cause is fixed.
Processing is idempotent: only `pending` deliveries are claimed, and the claim is a write
(UPDATE .. RETURNING), so two workers handed the same delivery never both process it.

Payload shape: docs/decisions.md, "Webhook deliveries".
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from foundation.money import AmountError, major_to_minor
from reconciliation.notifications.inbox import PENDING, PROCESSED, QUARANTINED, stored_delivery_id
from reconciliation.store.models import Delivery, Notification, Transfer
from reconciliation.store.write_statements import insert_ignoring_conflicts

#: Event types whose data carries money (amount, currency, status are required).
MONEY_EVENTS: Final = frozenset({"PAYMENT_RECEIVED", "TRANSACTION_COMPLETED", "TRANSACTION_FAILED"})

#: How a transfer row first learned of a transfer named by a notification.
ORIGIN_NOTIFIED: Final = "notified"

_ACCOUNT_NUMBER: Final = re.compile(r"[0-9]{6,20}")


class UnreadableDeliveryError(ValueError):
    """A delivery body that does not say what a notification must; the message says why."""


@dataclass(frozen=True, slots=True)
class NotificationDraft:
    """What one delivery claims, ready to store."""

    event_id: str
    event_type: str
    occurred_at: datetime
    transfer_ref: uuid.UUID | None
    receipt_ref: uuid.UUID | None
    account_ref: uuid.UUID | None
    endpoint_ref: uuid.UUID | None
    holding_ref: uuid.UUID | None
    account_number: str | None
    amount_minor: int | None
    currency: str | None
    claimed_status: str | None
    narration: str | None


@dataclass(slots=True)
class ProcessOutcome:
    """What a batch did, for logs, metrics and tests."""

    processed: list[int] = field(default_factory=list)
    quarantined: list[int] = field(default_factory=list)
    transfers_named: list[uuid.UUID] = field(default_factory=list)


def read_notification(body: bytes, delivery_id: str | None = None) -> NotificationDraft:
    """Parse and check a delivery body; raise UnreadableDeliveryError naming the first problem."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UnreadableDeliveryError(f"body is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise UnreadableDeliveryError("body is not a JSON object")
    event_id = _text(doc, "id", required=True)
    assert event_id is not None
    # Ids longer than the column are kept by their hash, as the inbox stores them.
    event_id = stored_delivery_id(event_id)
    if delivery_id is not None and event_id != delivery_id:
        raise UnreadableDeliveryError(
            f"body id {event_id!r} differs from the webhook-id header {delivery_id!r}"
        )
    event_type = _text(doc, "event", required=True)
    assert event_type is not None
    occurred_at = _timestamp(doc, "createdAt")
    data = doc.get("data")
    if not isinstance(data, dict):
        raise UnreadableDeliveryError("data: expected an object")
    amount_text = data.get("amount")
    currency = _text(data, "currency", where="data")
    status = _text(data, "status", where="data")
    money = event_type in MONEY_EVENTS
    if money and (amount_text is None or currency is None or status is None):
        raise UnreadableDeliveryError(
            f"data: {event_type} must carry amount, currency and status (got amount="
            f"{amount_text!r}, currency={currency!r}, status={status!r})"
        )
    amount_minor: int | None = None
    if amount_text is not None:
        if currency is None:
            raise UnreadableDeliveryError("data.amount is given without data.currency")
        if not isinstance(amount_text, str):
            raise UnreadableDeliveryError(
                f"data.amount must be a decimal string, got {type(amount_text).__name__} "
                f"{amount_text!r} (a JSON number may already be inexact)"
            )
        try:
            amount_minor = major_to_minor(amount_text, currency)
        except AmountError as exc:
            raise UnreadableDeliveryError(f"data.amount: {exc}") from None
    account_number = _text(data, "accountNumber", where="data")
    if account_number is not None and not _ACCOUNT_NUMBER.fullmatch(account_number):
        raise UnreadableDeliveryError(
            f"data.accountNumber {account_number!r} is not an account number"
        )
    return NotificationDraft(
        event_id=event_id,
        event_type=event_type,
        occurred_at=occurred_at,
        transfer_ref=_ref(data, "transferRef"),
        receipt_ref=_ref(data, "receiptRef"),
        account_ref=_ref(data, "accountRef"),
        endpoint_ref=_ref(data, "endpointRef"),
        holding_ref=_ref(data, "holdingRef"),
        account_number=account_number,
        amount_minor=amount_minor,
        currency=currency,
        claimed_status=status,
        narration=_text(data, "narration", where="data"),
    )


def process_deliveries(
    session: Session, delivery_pks: Sequence[int], now: datetime
) -> ProcessOutcome:
    """Turn pending deliveries into notifications, inside the caller's transaction.

    Deliveries already processed or quarantined (or claimed by another worker that committed
    first) are skipped. A delivery whose id already produced a notification from a different
    body is quarantined: two stories under one id are for a person to judge, not to add up.
    """
    outcome = ProcessOutcome()
    if not delivery_pks:
        return outcome
    claimed = session.execute(
        update(Delivery)
        .where(Delivery.id.in_(sorted(set(delivery_pks))), Delivery.state == PENDING)
        .values(attempts=Delivery.attempts + 1)
        .returning(Delivery.id, Delivery.delivery_id, Delivery.body)
    ).all()
    notified = _notified_by(session, [row.delivery_id for row in claimed])
    for row in sorted(claimed, key=lambda r: r.id):
        try:
            draft = read_notification(row.body, row.delivery_id)
            earlier = notified.setdefault(draft.event_id, set())
            if earlier - {row.id}:
                raise UnreadableDeliveryError(
                    f"delivery id {draft.event_id!r} was already processed with a different "
                    "body; kept for review (see the other delivery with this id)"
                )
        except UnreadableDeliveryError as exc:
            _quarantine(session, row.id, str(exc))
            outcome.quarantined.append(row.id)
            continue
        if row.id not in earlier:
            # A replayed delivery keeps the notification it already produced.
            session.add(_notification(row.id, draft, now))
            earlier.add(row.id)
        session.execute(
            update(Delivery)
            .where(Delivery.id == row.id)
            .values(state=PROCESSED, processed_at=now, error=None, event_type=draft.event_type)
        )
        outcome.processed.append(row.id)
        if draft.transfer_ref is not None:
            outcome.transfers_named.append(draft.transfer_ref)
    record_named_transfers(session, outcome.transfers_named, now)
    session.flush()
    return outcome


def record_named_transfers(session: Session, refs: Sequence[uuid.UUID], now: datetime) -> None:
    """Make sure each named transfer is polled soon: new ones are due now, waiting ones sooner.

    A notification is a hint that something changed; the gateway's status read is the truth,
    so a non-terminal transfer in backoff is brought forward rather than left to wait.
    """
    if not refs:
        return
    unique = sorted(set(refs))
    session.execute(
        insert_ignoring_conflicts(session, Transfer, ["transfer_ref"]),
        [
            {
                "transfer_ref": ref,
                "origin": ORIGIN_NOTIFIED,
                "is_terminal": False,
                "next_poll_at": now,
                "poll_attempts": 0,
                "created_at": now,
                "updated_at": now,
            }
            for ref in unique
        ],
    )
    session.execute(
        update(Transfer)
        .where(
            Transfer.transfer_ref.in_(unique),
            Transfer.is_terminal.is_(False),
            or_(Transfer.next_poll_at.is_(None), Transfer.next_poll_at > now),
        )
        .values(next_poll_at=now)
    )


def pending_deliveries(session: Session, received_before: datetime, limit: int) -> list[int]:
    """Deliveries still pending that arrived before the cutoff, oldest first (for the sweep)."""
    return list(
        session.scalars(
            select(Delivery.id)
            .where(Delivery.state == PENDING, Delivery.received_at < received_before)
            .order_by(Delivery.received_at, Delivery.id)
            .limit(limit)
        )
    )


def _notified_by(session: Session, delivery_ids: Sequence[str]) -> dict[str, set[int]]:
    """Event id -> the deliveries that already produced a notification under it."""
    found: dict[str, set[int]] = {}
    if not delivery_ids:
        return found
    for event_id, delivery_pk in session.execute(
        select(Notification.event_id, Notification.delivery_pk).where(
            Notification.event_id.in_(set(delivery_ids))
        )
    ):
        if delivery_pk is not None:
            found.setdefault(event_id, set()).add(delivery_pk)
    return found


def _quarantine(session: Session, pk: int, reason: str) -> None:
    session.execute(
        update(Delivery)
        .where(Delivery.id == pk)
        .values(
            state=QUARANTINED,
            error=f"{reason}. The body is kept unchanged; fix the cause and replay the delivery.",
        )
    )


def _notification(delivery_pk: int, d: NotificationDraft, now: datetime) -> Notification:
    return Notification(
        delivery_pk=delivery_pk,
        event_id=d.event_id,
        event_type=d.event_type,
        transfer_ref=d.transfer_ref,
        receipt_ref=d.receipt_ref,
        account_ref=d.account_ref,
        endpoint_ref=d.endpoint_ref,
        holding_ref=d.holding_ref,
        account_number=d.account_number,
        amount_minor=d.amount_minor,
        currency=d.currency,
        claimed_status=d.claimed_status,
        narration=d.narration,
        occurred_at=d.occurred_at,
        created_at=now,
    )


def _text(
    doc: Mapping[str, Any], name: str, *, where: str = "", required: bool = False
) -> str | None:
    value = doc.get(name)
    path = f"{where}.{name}" if where else name
    if value is None:
        if required:
            raise UnreadableDeliveryError(f"{path} is missing")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise UnreadableDeliveryError(f"{path} must be a non-empty string, got {value!r}")
    return value


def _ref(data: Mapping[str, Any], name: str) -> uuid.UUID | None:
    value = _text(data, name, where="data")
    if value is None:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise UnreadableDeliveryError(f"data.{name} {value!r} is not a UUID") from None


def _timestamp(doc: Mapping[str, Any], name: str) -> datetime:
    value = _text(doc, name, required=True)
    assert value is not None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UnreadableDeliveryError(f"{name} {value!r} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None:
        raise UnreadableDeliveryError(f"{name} {value!r} has no time zone")
    return parsed.astimezone(UTC)
