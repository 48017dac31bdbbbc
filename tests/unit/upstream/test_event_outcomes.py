"""Bodies that say their outcome only by their event type, and field maps with constants.

Bodies are bytes as a provider would send them, read through the public reader; the outcome
table comes from the settings (RECON_EVENT_OUTCOMES) as the workers build it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from foundation import ConfigError, WebhookSettings, load_settings
from upstream.webhooks.payloads import (
    EVENT_OUTCOMES,
    OUTCOME_STATUS,
    DeliveryNotification,
    DeliveryNotUnderstood,
    FieldMapError,
    configured_reader,
    reader_for,
)
from upstream.webhooks.payloads.field_map import NEVER_CONSTANT

RECEIPT = "0b8f5a52-8d1c-4c3e-9d57-222222222222"
HOLDING = "0b8f5a52-8d1c-4c3e-9d57-333333333333"
DATA = {"receiptRef": RECEIPT, "holdingRef": HOLDING, "accountNumber": "0123456789"}


def enveloped(shape: str, event: str, **data: Any) -> dict[str, Any]:
    """A money event with no status member, in the `recon` or `standard-webhooks` envelope."""
    if shape == "recon":
        top = {"id": "e-1", "event": event, "createdAt": "2026-11-22T00:48:01Z"}
        money = {"amount": "1500.50", "currency": "NGN"}
    else:
        top = {"id": "evt_1", "type": event, "timestamp": "2026-11-22T00:48:01Z"}
        money = {"amountMinorUnits": "150050", "currency": "NGN"}
    return {**top, "data": {**DATA, **money, **data}}


def flat(event: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "f-1",
        "eventType": event,
        "createdAt": 1795308481123,
        "receiptReference": RECEIPT,
        "holdingRef": HOLDING,
        "amount": "1500.50",
        "currency": "NGN",
        **extra,
    }


def body_of(shape: str, event: str, **extra: Any) -> dict[str, Any]:
    return flat(event, **extra) if shape == "flat" else enveloped(shape, event, **extra)


def read(doc: dict[str, Any], reader: Any = None, **headers: str) -> Any:
    return (reader or configured_reader()).read(json.dumps(doc).encode(), headers)


@pytest.mark.parametrize("shape", ["recon", "standard-webhooks", "flat"])
@pytest.mark.parametrize(
    ("event", "status"),
    [
        ("PAYMENT_RECEIVED", "SUCCESSFUL"),
        ("TRANSACTION_COMPLETED", "SUCCESSFUL"),
        ("TRANSACTION_FAILED", "FAILED"),
    ],
)
def test_a_body_without_status_takes_its_event_types_outcome(
    shape: str, event: str, status: str
) -> None:
    got = read(body_of(shape, event))
    assert isinstance(got, DeliveryNotification), got.describe()
    assert (got.shape, got.event_type, got.claimed_status) == (shape, event, status)
    assert (got.amount_minor, got.currency) == (150050, "NGN")


def test_the_default_table_says_each_money_event_and_nothing_else() -> None:
    assert EVENT_OUTCOMES == {
        "PAYMENT_RECEIVED": "successful",
        "TRANSACTION_COMPLETED": "successful",
        "TRANSACTION_FAILED": "failed",
    }
    other = read(enveloped("recon", "KYC_VERIFIED", amount=None, currency=None))
    assert isinstance(other, DeliveryNotification) and other.claimed_status is None


@pytest.mark.parametrize("shape", ["recon", "standard-webhooks", "flat"])
def test_a_status_the_body_carries_is_kept_even_against_its_event_type(shape: str) -> None:
    got = read(body_of(shape, "TRANSACTION_COMPLETED", status="REVERSED"))
    assert isinstance(got, DeliveryNotification), got.describe()
    assert got.claimed_status == "REVERSED"


def test_a_null_status_counts_as_none() -> None:
    got = read(enveloped("standard-webhooks", "TRANSACTION_FAILED", status=None))
    assert isinstance(got, DeliveryNotification) and got.claimed_status == "FAILED"


def test_a_status_of_the_wrong_kind_is_not_replaced_by_the_event_type() -> None:
    result = read(enveloped("recon", "PAYMENT_RECEIVED", status=7))
    assert isinstance(result, DeliveryNotUnderstood)
    assert result.closest.invalid == ("data.status",)


def test_a_money_event_outside_the_table_without_status_is_not_understood() -> None:
    reader = configured_reader(outcomes={"PAYMENT_RECEIVED": "successful"})
    result = read(enveloped("standard-webhooks", "TRANSACTION_FAILED"), reader)
    assert isinstance(result, DeliveryNotUnderstood)
    assert result.closest.shape == "standard-webhooks"
    assert result.closest.missing == ("data.status",)
    assert "RECON_EVENT_OUTCOMES gives it no outcome" in result.describe()


def test_the_setting_replaces_the_table(base_env: dict[str, str]) -> None:
    env = {
        **base_env,
        "RECON_EVENT_OUTCOMES": " TRANSFER_SETTLED=successful, PAYMENT_RECEIVED=failed",
    }
    reader = reader_for(load_settings(env).webhooks)
    settled = read(enveloped("recon", "TRANSFER_SETTLED"), reader)
    assert isinstance(settled, DeliveryNotification) and settled.claimed_status == "SUCCESSFUL"
    received = read(enveloped("recon", "PAYMENT_RECEIVED"), reader)
    assert isinstance(received, DeliveryNotification) and received.claimed_status == "FAILED"
    dropped = read(enveloped("recon", "TRANSACTION_COMPLETED"), reader)
    assert isinstance(dropped, DeliveryNotUnderstood), "not in the table that replaced the default"
    assert load_settings(base_env).webhooks.event_outcomes is None


@pytest.mark.parametrize(
    "value",
    [
        "PAYMENT_RECEIVED",
        "PAYMENT_RECEIVED=completed",
        "=successful",
        "PAYMENT_RECEIVED=successful,PAYMENT_RECEIVED=failed",
        "X" * 65 + "=failed",
        ",",
    ],
)
def test_a_bad_outcome_table_stops_start_up_naming_the_variable(
    base_env: dict[str, str], value: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({**base_env, "RECON_EVENT_OUTCOMES": value})
    (line,) = raised.value.problems
    assert line.startswith("RECON_EVENT_OUTCOMES=") and "successful, failed" in line


def test_settings_outcomes_are_the_readers() -> None:
    """foundation may not import upstream, so settings list the outcomes; they must agree."""
    assert tuple(OUTCOME_STATUS) == WebhookSettings.OUTCOMES
    assert set(EVENT_OUTCOMES.values()) <= set(OUTCOME_STATUS)


# --- field maps: every field but two optional, constants, outcome from the event type --------

#: The body the issue describes, learned: no status, amount in minor units, no currency at all.
SPARSE_MAP = {
    "eventType": "kind",
    "occurredAt": "at",
    "amount": "value",
    "amountUnits": "minor",
    "currency": "=NGN",
    "narration": "=paid through the sandbox bank...",
}


def test_a_field_map_with_constants_and_no_status_reads_the_outcome_from_the_event_type() -> None:
    reader = configured_reader(("field-map",), SPARSE_MAP)
    for event, status in (
        ("TRANSACTION_COMPLETED", "SUCCESSFUL"),
        ("TRANSACTION_FAILED", "FAILED"),
    ):
        got = read({"kind": event, "at": 1795308481, "value": "2500"}, reader)
        assert isinstance(got, DeliveryNotification), got.describe()
        assert (got.amount_minor, got.currency, got.claimed_status) == (2500, "NGN", status)
        assert got.narration == "paid through the sandbox bank..."


def test_a_constant_is_held_to_the_rules_of_a_value_read_from_the_body() -> None:
    reader = configured_reader(("field-map",), {**SPARSE_MAP, "amountUnits": "major"})
    result = read({"kind": "PAYMENT_RECEIVED", "at": 1795308481, "value": "25.001"}, reader)
    assert isinstance(result, DeliveryNotUnderstood)
    assert "more decimal places" in result.describe()
    # Major units need the unit's exponent: a constant naming a unit recon cannot scale is
    # refused exactly as the same text read from the body would be.
    unknown = configured_reader(
        ("field-map",), {**SPARSE_MAP, "currency": "=NAIRA", "amountUnits": "major"}
    )
    result = read({"kind": "PAYMENT_RECEIVED", "at": 1795308481, "value": "25.00"}, unknown)
    assert isinstance(result, DeliveryNotUnderstood) and "NAIRA" in result.describe()


def test_a_field_map_of_only_the_two_required_fields_reads_a_non_money_event() -> None:
    reader = configured_reader(("field-map",), {"eventType": "kind", "occurredAt": "at"})
    got = read({"kind": "KYC_VERIFIED", "at": 1795308481}, reader)
    assert isinstance(got, DeliveryNotification), got.describe()
    assert (got.amount_minor, got.currency, got.claimed_status) == (None, None, None)


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"eventType": "=PAYMENT_RECEIVED"}, "eventType cannot be a constant"),
        ({"occurredAt": "=2026-11-22T00:00:00Z"}, "occurredAt cannot be a constant"),
        ({"eventId": "=1"}, "eventId cannot be a constant"),
        ({"currency": "="}, "currency"),
    ],
)
def test_a_constant_where_none_can_be_is_refused_by_reader_and_settings(
    base_env: dict[str, str], change: dict[str, str], complaint: str
) -> None:
    mapping = {**SPARSE_MAP, **change}
    with pytest.raises(FieldMapError, match=complaint):
        configured_reader(field_map=mapping)
    with pytest.raises(ConfigError) as raised:
        load_settings({**base_env, "RECON_PAYLOAD_FIELD_MAP": json.dumps(mapping)})
    (line,) = raised.value.problems
    assert re.match(r"RECON_PAYLOAD_FIELD_MAP is not valid: .*" + complaint, line), line


def test_settings_carry_constants_to_the_reader(base_env: dict[str, str]) -> None:
    env = {
        **base_env,
        "RECON_PAYLOAD_SHAPES": "field-map",
        "RECON_PAYLOAD_FIELD_MAP": json.dumps(SPARSE_MAP),
        "RECON_EVENT_OUTCOMES": "PAYMENT_RECEIVED=failed",
    }
    reader = reader_for(load_settings(env).webhooks)
    got = read({"kind": "PAYMENT_RECEIVED", "at": 1795308481, "value": "7"}, reader)
    assert isinstance(got, DeliveryNotification), got.describe()
    assert (got.currency, got.claimed_status) == ("NGN", "FAILED")


def test_settings_refuse_the_constants_the_reader_refuses() -> None:
    assert WebhookSettings.PAYLOAD_MAP_NEVER_CONSTANT == NEVER_CONSTANT
