"""Delivery payload adapters: each plausible shape read exactly, and precise refusals.

Bodies are written here as a provider would send them (bytes), and read through the public
reader, so each adapter is tested as the processor uses it.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foundation import ConfigError, WebhookSettings, load_settings
from upstream.webhooks.payloads import (
    BUILT_IN,
    SHAPE_NAMES,
    DeliveryNotification,
    DeliveryNotUnderstood,
    FieldMapError,
    NotUnderstood,
    PayloadAdapter,
    PayloadConfigError,
    PayloadReader,
    configured_reader,
    reader_for,
)
from upstream.webhooks.payloads.field_map import FIELDS, OPTIONS

TRANSFER = "0b8f5a52-8d1c-4c3e-9d57-111111111111"
RECEIPT = "0b8f5a52-8d1c-4c3e-9d57-222222222222"
HOLDING = "0b8f5a52-8d1c-4c3e-9d57-333333333333"
WHEN = datetime(2026, 11, 22, 0, 48, 1, 123000, tzinfo=UTC)
READER = configured_reader()


def recon_body(**data: Any) -> dict[str, Any]:
    return {
        "id": "evt-1",
        "event": "TRANSACTION_COMPLETED",
        "createdAt": "2026-11-22T00:48:01.123Z",
        "data": {
            "transferRef": TRANSFER,
            "receiptRef": RECEIPT,
            "holdingRef": HOLDING,
            "accountNumber": "0123456789",
            "amount": "1500.50",
            "currency": "NGN",
            "status": "SUCCESSFUL",
            **data,
        },
    }


def standard_body(**data: Any) -> dict[str, Any]:
    return {
        "id": "evt_2b9c41d0",
        "type": "PAYMENT_RECEIVED",
        "timestamp": "2026-11-22T00:48:01.123Z",
        "data": {
            "transferRef": None,
            "receiptRef": RECEIPT,
            "holdingRef": HOLDING,
            "accountNumber": "0123456789",
            "amountMinorUnits": "15000",
            "currency": "NGN",
            "status": "SUCCESSFUL",
            **data,
        },
    }


FLAT = (
    b'{"id":"4c2f0a8e-1111-4000-8000-000000000001","eventType":"PAYMENT_RECEIVED",'
    b'"createdAt":1795308481123,"reference":null,"receiptReference":"' + RECEIPT.encode() + b'",'
    b'"holdingRef":"' + HOLDING.encode() + b'","accountNumber":"0123456789",'
    b'"amount":1500.50,"currency":"NGN","status":"SUCCESSFUL","narration":"rent"}'
)


def read(doc: dict[str, Any] | bytes, reader: Any = READER, **headers: str) -> Any:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return reader.read(body, headers)


def understood(doc: dict[str, Any] | bytes, reader: Any = READER) -> DeliveryNotification:
    result = read(doc, reader)
    assert isinstance(result, DeliveryNotification), result.describe()
    return result


def not_understood(doc: dict[str, Any] | bytes, reader: Any = READER) -> DeliveryNotUnderstood:
    result = read(doc, reader)
    assert isinstance(result, DeliveryNotUnderstood), result
    return result


# --- recon's shape ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("1500.50", "NGN", 150050),
        ("0.01", "NGN", 1),
        ("92233720368547758.07", "NGN", 9223372036854775807),
        ("1500", "JPY", 1500),
        ("1.234", "KWD", 1234),
    ],
)
def test_recon_shape_amounts_are_exact(amount: str, currency: str, minor: int) -> None:
    got = understood(recon_body(amount=amount, currency=currency))
    assert (got.shape, got.amount_minor, got.currency) == ("recon", minor, currency)


def test_recon_shape_reads_refs_time_and_body_id() -> None:
    got = understood(recon_body())
    assert got.transfer_ref == uuid.UUID(TRANSFER) and got.receipt_ref == uuid.UUID(RECEIPT)
    assert got.holding_ref == uuid.UUID(HOLDING) and got.account_number == "0123456789"
    assert got.occurred_at == WHEN and got.body_id == "evt-1"
    assert got.event_type == "TRANSACTION_COMPLETED" and got.claimed_status == "SUCCESSFUL"


def test_a_json_number_is_read_from_its_digits_never_a_float() -> None:
    # 0.1 + 0.2 style inexactness would show here: the digits are the amount.
    body = json.dumps(recon_body(amount="__")).replace('"__"', "92233720368547758.07")
    assert understood(body.encode()).amount_minor == 9223372036854775807


# --- Standard Webhooks' shape ---------------------------------------------------------------


def test_standard_webhooks_shape_takes_minor_units_as_they_are() -> None:
    got = understood(standard_body())
    assert got.shape == "standard-webhooks" and got.amount_minor == 15000
    assert got.body_id == "evt_2b9c41d0" and got.event_type == "PAYMENT_RECEIVED"
    assert got.transfer_ref is None and got.receipt_ref == uuid.UUID(RECEIPT)
    assert got.occurred_at == WHEN


def test_standard_webhooks_minor_units_must_be_digits() -> None:
    result = not_understood(standard_body(amountMinorUnits="150.50"))
    assert result.closest.shape == "standard-webhooks"
    assert result.closest.invalid == ("data.amountMinorUnits",)
    assert "string of decimal digits" in result.describe()


# --- the flat shape ------------------------------------------------------------------------


def test_flat_shape_reads_a_json_number_and_epoch_milliseconds() -> None:
    got = understood(FLAT)
    assert got.shape == "flat" and got.amount_minor == 150050 and got.currency == "NGN"
    assert got.occurred_at == datetime(2026, 11, 22, 0, 48, 1, 123000, tzinfo=UTC)
    assert got.receipt_ref == uuid.UUID(RECEIPT) and got.transfer_ref is None
    assert got.narration == "rent"


def test_flat_amount_beyond_the_currency_is_refused_not_rounded() -> None:
    result = not_understood(FLAT.replace(b"1500.50", b"1500.505"))
    assert result.closest.shape == "flat" and result.closest.invalid == ("amount",)
    assert "more decimal places" in result.describe()


@given(st.integers(min_value=0, max_value=10**17), st.sampled_from(["NGN", "JPY", "KWD"]))
def test_flat_major_units_round_trip_exactly(minor: int, currency: str) -> None:
    places = {"NGN": 2, "JPY": 0, "KWD": 3}[currency]
    whole, frac = divmod(minor, 10**places)
    text = f"{whole}.{frac:0{places}d}" if places else str(whole)
    body = FLAT.replace(b"1500.50", text.encode()).replace(b'"NGN"', f'"{currency}"'.encode())
    assert understood(body).amount_minor == minor


# --- a shape learned from configuration -------------------------------------------------------

LEARNED = {
    "eventId": "meta.ref",
    "eventType": "header:x-event-kind",
    "occurredAt": "meta.at",
    "receiptRef": "payload.lines.0.receipt",
    "amount": "payload.value.minor",
    "currency": "payload.value.ccy",
    "status": "payload.state",
    "amountUnits": "minor",
    "timestampUnit": "epoch-seconds",
}
LEARNED_BODY = {
    "meta": {"ref": 77, "at": 1795308481},
    "payload": {
        "lines": [{"receipt": RECEIPT}],
        "value": {"minor": "15000", "ccy": "NGN"},
        "state": "SUCCESSFUL",
    },
}


def test_field_map_reads_paths_indexes_and_headers() -> None:
    reader = configured_reader(field_map=LEARNED)
    assert reader.shapes[0] == "field-map", "a learned shape is tried first"
    body = json.dumps(LEARNED_BODY).encode()
    got = reader.read(body, {"X-Event-Kind": "PAYMENT_RECEIVED"})
    assert isinstance(got, DeliveryNotification), got.describe()
    assert (got.shape, got.event_type, got.amount_minor, got.body_id) == (
        "field-map",
        "PAYMENT_RECEIVED",
        15000,
        "77",
    )
    assert got.receipt_ref == uuid.UUID(RECEIPT)
    assert got.occurred_at == datetime(2026, 11, 22, 0, 48, 1, tzinfo=UTC)


def test_field_map_names_what_it_did_not_find() -> None:
    reader = configured_reader(("field-map",), LEARNED)
    doc = {**LEARNED_BODY, "payload": {"state": "SUCCESSFUL"}}
    result = reader.read(json.dumps(doc).encode(), {"x-event-kind": "PAYMENT_RECEIVED"})
    assert isinstance(result, DeliveryNotUnderstood)
    assert result.closest.missing == ("payload.value.ccy", "payload.value.minor")
    assert "must carry amount and currency" in result.describe()


@pytest.mark.parametrize(
    ("mapping", "complaint"),
    [
        ({"eventType": "t"}, "occurredAt is required"),
        ({**LEARNED, "amountt": "x"}, "'amountt' is not one of our fields"),
        ({**LEARNED, "amountUnits": "cents"}, "amountUnits must be one of major, minor"),
        ({**LEARNED, "status": ""}, "status must be a dotted path"),
    ],
)
def test_a_bad_field_map_is_refused_with_every_reason(
    mapping: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(FieldMapError, match=complaint):
        configured_reader(field_map=mapping)


# --- the reader: order, configuration, refusals -----------------------------------------------


def test_shapes_setting_limits_and_orders_the_adapters() -> None:
    only_recon = configured_reader(("recon",))
    result = not_understood(standard_body(), only_recon)
    assert [t.shape for t in result.tried] == ["recon"]
    assert set(result.closest.missing) == {"createdAt", "event"}
    assert configured_reader(("flat", "recon")).shapes == ("flat", "recon")


@pytest.mark.parametrize(
    ("shapes", "field_map", "complaint"),
    [
        (("recon", "xml"), None, "names 'xml'"),
        (("field-map",), None, "RECON_PAYLOAD_FIELD_MAP is not set"),
        ((), None, "names no shape"),
    ],
)
def test_bad_shape_settings_are_refused(
    shapes: tuple[str, ...], field_map: dict[str, str] | None, complaint: str
) -> None:
    with pytest.raises(PayloadConfigError, match=complaint):
        configured_reader(shapes, field_map)


def test_not_understood_names_the_closest_shape_and_all_its_gaps() -> None:
    doc = recon_body()
    del doc["data"]["currency"], doc["data"]["amount"]
    result = not_understood(doc)
    assert result.closest.shape == "recon"
    assert result.closest.missing == ("data.amount", "data.currency")
    assert [t.shape for t in result.tried] == list(BUILT_IN)
    assert result.top_level == ("createdAt", "data", "event", "id")


def test_the_same_gap_with_other_values_is_the_same_problem() -> None:
    a = not_understood(recon_body(amount="1,500.50"))
    b = not_understood(recon_body(amount="2,000.00", accountNumber="0987654321"))
    assert a.signature() == b.signature() == ("recon", "invalid:data.amount")


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (b"\xff\xfe{", "not valid JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"amount": NaN}', "not valid JSON"),
    ],
)
def test_bodies_that_are_not_json_objects(body: bytes, complaint: str) -> None:
    result = not_understood(body)
    assert result.closest.shape == "json" and complaint in result.describe()


def test_settings_vocabulary_matches_the_adapters() -> None:
    """foundation may not import upstream, so settings list the names; they must agree."""
    assert WebhookSettings.PAYLOAD_SHAPE_NAMES == SHAPE_NAMES
    assert tuple(FIELDS) == WebhookSettings.PAYLOAD_MAP_FIELDS
    assert dict(WebhookSettings.PAYLOAD_MAP_OPTIONS) == OPTIONS


# --- the settings that configure the reader -----------------------------------------------------


def test_settings_build_the_reader_they_describe(base_env: dict[str, str]) -> None:
    settings = load_settings(
        {
            **base_env,
            "RECON_PAYLOAD_SHAPES": "field-map, standard-webhooks",
            "RECON_PAYLOAD_FIELD_MAP": json.dumps(LEARNED),
        }
    )
    reader = reader_for(settings.webhooks)
    assert reader.shapes == ("field-map", "standard-webhooks")
    assert load_settings(base_env).webhooks.payload_shapes is None
    assert reader_for(load_settings(base_env).webhooks).shapes == tuple(BUILT_IN)


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"RECON_PAYLOAD_SHAPES": "recon,protobuf"}, "RECON_PAYLOAD_SHAPES='recon,protobuf'"),
        ({"RECON_PAYLOAD_SHAPES": "field-map"}, "RECON_PAYLOAD_FIELD_MAP is not set"),
        ({"RECON_PAYLOAD_FIELD_MAP": "eventType=type"}, "expected a JSON object"),
        ({"RECON_PAYLOAD_FIELD_MAP": '{"eventType": "type"}'}, "occurredAt is required"),
        (
            {"RECON_PAYLOAD_FIELD_MAP": '{"eventType": "t", "occurredAt": "o", "amt": "a"}'},
            "'amt' is not one of eventId",
        ),
    ],
)
def test_bad_payload_settings_stop_start_up_naming_the_variable(
    base_env: dict[str, str], env: dict[str, str], complaint: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(complaint)):
        load_settings({**base_env, **env})


@pytest.mark.parametrize("depth", [1_000, 50_000])
def test_a_body_nested_deeper_than_the_decoders_go_is_not_understood(depth: int) -> None:
    # Before: RecursionError escaped the reader, so a replayed quarantined delivery failed the
    # processor's message instead of staying quarantined with a reason.
    body = b'{"id": "x", "data": ' + b"[" * depth + b"]" * depth + b"}"
    result = not_understood(body)
    assert "nested too deeply" in result.describe()


class _BreaksOnMarker(PayloadAdapter):
    """A shape whose reading raises on a body carrying `"breaks": true` (what a shape's bug, or
    an input that costs too much, does): MemoryError, as the third wave's amount did."""

    name = "breaks"

    def read(self, body: Any, headers: Any) -> DeliveryNotification | NotUnderstood:
        if body.get("breaks") is True:
            raise MemoryError("x" * 1_000_000)
        return NotUnderstood(self.name, ())


def test_a_shape_that_raises_leaves_the_body_not_understood_with_a_short_reason() -> None:
    """Before: any exception in a shape's reading escaped the reader and failed the whole batch
    (retried without end). Now the body alone is not understood, with the exception's type."""
    reader = PayloadReader([_BreaksOnMarker(), *configured_reader().adapters])
    broken = json.dumps({"breaks": True, "id": "x"}).encode()
    result = reader.read(broken, {})
    assert isinstance(result, DeliveryNotUnderstood)
    assert "reading the body failed: MemoryError" in result.describe()
    assert len(result.describe()) < 2_000
    # The other shapes still read a body the broken one does not break on.
    genuine = json.dumps(
        {
            "id": str(uuid.uuid4()),
            "event": "PAYMENT_RECEIVED",
            "createdAt": "2026-11-22T00:48:01Z",
            "data": {"amount": "1.00", "currency": "NGN", "status": "SUCCESSFUL"},
        }
    ).encode()
    assert isinstance(reader.read(genuine, {}), DeliveryNotification)
