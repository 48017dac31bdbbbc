"""Webhook event payloads, in the one shape docs/decisions.md fixes ("Webhook deliveries").

Amounts go out as decimal strings in major units, as virtual-account providers send them; the
exponent table below is the only place that knows how many decimals a currency has.
"""

from __future__ import annotations

from typing import Any

from sandbox.config import format_timestamp
from sandbox.endpoints import Endpoint

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

_EXPONENTS = {"JPY": 0, "KRW": 0, "XOF": 0, "XAF": 0, "BHD": 3, "KWD": 3, "OMR": 3, "TND": 3}


def exponent(currency: str) -> int:
    return _EXPONENTS.get(currency, 2)


def major_units(amount_minor: int, currency: str) -> str:
    """Exact decimal text of minor units: 150050 NGN -> ``"1500.50"``; never a float."""
    exp = exponent(currency)
    if exp == 0:
        return str(amount_minor)
    sign = "-" if amount_minor < 0 else ""
    whole, frac = divmod(abs(amount_minor), 10**exp)
    return f"{sign}{whole}.{frac:0{exp}d}"


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
    exp = exponent(currency)
    minor = int(amount.replace(".", "")) if exp else int(amount)
    return {**data, "amount": major_units(minor + 1, currency)}
