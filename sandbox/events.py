"""Webhook event payloads: one canonical event, put on the wire in the variant's shape.

Events are built and logged in one canonical form (recon's first guess, docs/decisions.md
"Webhook deliveries": `{id, event, createdAt, data}` with major-unit decimal strings), and faults
act on that form. `shape_payload` then writes the body the provider variant sends
(`ProviderVariant.payload_shape`), because the company spec shows no payload at all:

- ``recon``: the canonical form as it is.
- ``standard-webhooks``: what Standard Webhooks recommends, `{id, type, timestamp, data}`; the id
  is ``evt_<hex>``, `data` keeps the camelCase refs, and the amount is a string of minor units
  (`amountMinorUnits`), as the gateway writes amounts.
- ``flat``: one object with no envelope, as many virtual-account callbacks are: `id`,
  `eventType`, `createdAt` as Unix epoch milliseconds, `reference` (the transferRef),
  `receiptReference`, the account, endpoint and holding refs, `accountNumber`, `bankCode`,
  `amount` as a JSON number in major units (``1500.50``, written with exactly the currency's
  decimals), `currency`, `status`, `narration`.

Under ``body_outcome = event-type`` (`ProviderVariant.body_outcome`) no shape carries a `status`
member: the event type alone says how the money moved, as some providers' callbacks do.

The exponent table in `sandbox.units` is the only place that knows how many decimals a currency has.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Final

import msgspec

from sandbox.config import format_timestamp, parse_timestamp
from sandbox.endpoints import Endpoint
from sandbox.units import exponent, major_units
from sandbox.variants import BodyOutcome

PAYMENT_RECEIVED = "PAYMENT_RECEIVED"
TRANSACTION_COMPLETED = "TRANSACTION_COMPLETED"
TRANSACTION_FAILED = "TRANSACTION_FAILED"
ACCOUNT_CREATED = "ACCOUNT_CREATED"
KYC_VERIFIED = "KYC_VERIFIED"
EVENT_TYPES = (
    TRANSACTION_COMPLETED,
    TRANSACTION_FAILED,
    ACCOUNT_CREATED,
    KYC_VERIFIED,
    PAYMENT_RECEIVED,
)


def payload(
    event_id: str, event_type: str, created_ms: int, data: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": event_id,
        "event": event_type,
        "createdAt": format_timestamp(created_ms),
        "data": data,
    }


def money_data(
    endpoint: Endpoint,
    *,
    transfer_ref: str | None,
    receipt_ref: str | None,
    amount_minor: int,
    status: str,
    narration: str,
) -> dict[str, Any]:
    """Data of PAYMENT_RECEIVED / TRANSACTION_COMPLETED / TRANSACTION_FAILED."""
    locator = endpoint.locator
    return {
        "transferRef": transfer_ref,
        "receiptRef": receipt_ref,
        "accountRef": endpoint.account_ref,
        "endpointRef": endpoint.endpoint_ref,
        "holdingRef": endpoint.holding_ref,
        "accountNumber": locator.account_number if locator else None,
        "bankCode": locator.bank_code if locator else None,
        "amount": major_units(amount_minor, endpoint.currency),
        "currency": endpoint.currency,
        "status": status,
        "narration": narration,
    }


def account_data(endpoint: Endpoint) -> dict[str, Any]:
    """Data of ACCOUNT_CREATED / KYC_VERIFIED: refs and account number, money fields null."""
    locator = endpoint.locator
    return {
        "transferRef": None,
        "receiptRef": None,
        "accountRef": endpoint.account_ref,
        "endpointRef": endpoint.endpoint_ref,
        "holdingRef": endpoint.holding_ref,
        "accountNumber": locator.account_number if locator else None,
        "bankCode": locator.bank_code if locator else None,
        "amount": None,
        "currency": None,
        "status": None,
        "narration": None,
    }


def bump_amount(data: dict[str, Any]) -> dict[str, Any]:
    """The ``altered_amount`` fault: one minor unit more than the ledger says."""
    amount, currency = data.get("amount"), data.get("currency")
    if not isinstance(amount, str) or not isinstance(currency, str):
        return data
    return {**data, "amount": major_units(minor_units(amount, currency) + 1, currency)}


def minor_units(amount: str, currency: str) -> int:
    """Inverse of `major_units` for the text it writes: ``"1500.50"`` NGN -> 150050."""
    return int(amount.replace(".", "")) if exponent(currency) else int(amount)


#: Prefix of event ids in the Standard Webhooks shape (its examples use typed ids).
STANDARD_EVENT_PREFIX: Final = "evt_"
#: Prefix of the message ids a provider puts in `webhook-id` when it is not the body's id.
MESSAGE_PREFIX: Final = "msg_"


def event_id_for(shape: str, fresh_uuid: str) -> str:
    """The id an event carries under `shape`: a plain uuid, or ``evt_<hex>``."""
    if shape == "standard-webhooks":
        return STANDARD_EVENT_PREFIX + fresh_uuid.replace("-", "")
    return fresh_uuid


def shape_payload(
    shape: str, event: dict[str, Any], body_outcome: BodyOutcome = "status"
) -> dict[str, Any]:
    """The body `shape` sends for a canonical event (see the module docstring)."""
    if body_outcome == "event-type":
        event = {**event, "data": {k: v for k, v in event["data"].items() if k != "status"}}
    if shape == "recon":
        return event
    data = dict(event["data"])
    amount, currency = data.pop("amount"), data.get("currency")
    if shape == "standard-webhooks":
        minor = str(minor_units(amount, currency)) if amount and currency else None
        return {
            "id": event["id"],
            "type": event["event"],
            "timestamp": event["createdAt"],
            "data": {**data, "amountMinorUnits": minor},
        }
    if shape == "flat":
        return {
            "id": event["id"],
            "eventType": event["event"],
            "createdAt": parse_timestamp(event["createdAt"]),
            "reference": data["transferRef"],
            "receiptReference": data["receiptRef"],
            "accountRef": data["accountRef"],
            "endpointRef": data["endpointRef"],
            "holdingRef": data["holdingRef"],
            "accountNumber": data["accountNumber"],
            "bankCode": data["bankCode"],
            "amount": Decimal(amount) if amount is not None else None,
            "currency": currency,
            **({"status": data["status"]} if "status" in data else {}),
            "narration": data["narration"],
        }
    raise ValueError(f"unknown payload shape {shape!r}")


#: Writes a `Decimal` as a JSON number with its own digits (1500.50 stays 1500.50).
_NUMBER_ENCODER: Final = msgspec.json.Encoder(decimal_format="number")


def encode_payload(body: dict[str, Any]) -> bytes:
    """Compact JSON; decimal amounts as exact JSON numbers, never through a float."""
    if any(isinstance(value, Decimal) for value in body.values()):
        return _NUMBER_ENCODER.encode(body)
    return json.dumps(body, separators=(",", ":")).encode()
