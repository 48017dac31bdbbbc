"""Delivery bytes -> NotificationDraft: exact amounts, refs, and clear refusals."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from reconciliation.notifications.processing import UnreadableDeliveryError, read_notification

TRANSFER = "0b8f5a52-8d1c-4c3e-9d57-111111111111"
RECEIPT = "0b8f5a52-8d1c-4c3e-9d57-222222222222"


def body(**data_overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "transferRef": TRANSFER,
        "receiptRef": RECEIPT,
        "accountRef": str(uuid.uuid4()),
        "endpointRef": str(uuid.uuid4()),
        "holdingRef": str(uuid.uuid4()),
        "accountNumber": "0123456789",
        "bankCode": "000",
        "amount": "1500.50",
        "currency": "NGN",
        "status": "SUCCESSFUL",
        "narration": "text",
    }
    data.update(data_overrides)
    return {
        "id": "evt-1",
        "event": "TRANSACTION_COMPLETED",
        "createdAt": "2026-11-22T00:48:01.123Z",
        "data": data,
    }


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("1500.50", "NGN", 150050),
        ("0.01", "NGN", 1),
        ("92233720368547758.07", "NGN", 9223372036854775807),
        ("1500", "JPY", 1500),
        ("1.234", "KWD", 1234),
        ("0.1", "NGN", 10),
    ],
)
def test_amounts_become_exact_minor_units(amount: str, currency: str, minor: int) -> None:
    draft = read_notification(encode(body(amount=amount, currency=currency)))
    assert draft.amount_minor == minor
    assert draft.currency == currency


def test_refs_account_number_and_time_are_read() -> None:
    draft = read_notification(encode(body()))
    assert draft.transfer_ref == uuid.UUID(TRANSFER)
    assert draft.receipt_ref == uuid.UUID(RECEIPT)
    assert draft.account_number == "0123456789"
    assert draft.claimed_status == "SUCCESSFUL"
    assert draft.occurred_at == datetime(2026, 11, 22, 0, 48, 1, 123000, tzinfo=UTC)
    assert draft.event_type == "TRANSACTION_COMPLETED"


def test_account_events_carry_no_money() -> None:
    doc = body(amount=None, currency=None, status=None, transferRef=None, receiptRef=None)
    doc["event"] = "ACCOUNT_CREATED"
    draft = read_notification(encode(doc))
    assert draft.amount_minor is None
    assert draft.transfer_ref is None


@pytest.mark.parametrize(
    ("mutate", "complaint"),
    [
        (lambda d: d["data"].update(amount="1500.505"), "more decimal places"),
        (lambda d: d["data"].update(amount=True), "must be a number or a decimal string"),
        (lambda d: d["data"].update(amount="1,500.50"), "not a plain decimal"),
        (lambda d: d["data"].update(currency="XYZ"), "unknown currency"),
        (lambda d: d["data"].update(amount=None), "must carry amount"),
        (lambda d: d["data"].update(transferRef="not-a-uuid"), "transferRef"),
        (lambda d: d["data"].update(accountNumber="01234-56789"), "accountNumber"),
        (lambda d: d.update(createdAt="yesterday"), "createdAt"),
        (lambda d: d.update(createdAt="2026-11-22T00:48:01"), "no time zone"),
        (lambda d: d.pop("id"), "id is missing"),
        (lambda d: d.update(data=[1]), "data: expected an object"),
    ],
)
def test_bad_bodies_are_refused_with_the_reason(mutate: Any, complaint: str) -> None:
    doc = body()
    mutate(doc)
    with pytest.raises(UnreadableDeliveryError, match=complaint):
        read_notification(encode(doc))


def test_bytes_that_are_not_json_are_refused() -> None:
    with pytest.raises(UnreadableDeliveryError, match="not valid JSON"):
        read_notification(b"\xff\xfe{")
