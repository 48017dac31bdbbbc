"""Wire conversion at the boundary: amounts, refs, timestamps, envelopes, evidence."""

from __future__ import annotations

import uuid
from datetime import UTC

import msgspec
import pytest

from upstream.errors import ProtocolError
from upstream.wire.common import parse_envelope
from upstream.wire.decoding import MinorUnits, Timestamp, decode, format_minor_units
from upstream.wire.transfers import Transfer

REF = str(uuid.uuid4())


@pytest.mark.parametrize("text,value", [("0", 0), ("150050", 150050), ("007", 7)])
def test_amounts_are_digit_strings(text: str, value: int) -> None:
    assert decode(text, MinorUnits, "body.amountMinorUnits") == value


@pytest.mark.parametrize("bad", ["-1", "1.5", "1e3", " 12", "12 ", "", "+3", "١٢", 12, 1.5, None])
def test_anything_but_digits_is_refused_with_the_field_named(bad: object) -> None:
    with pytest.raises(ProtocolError, match=r"body\.amountMinorUnits: expected an amount"):
        decode(bad, MinorUnits, "body.amountMinorUnits")


@pytest.mark.parametrize("bad", [-1, True, 1.0])
def test_outgoing_amounts_must_be_non_negative_ints(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative int"):
        format_minor_units(bad)  # type: ignore[arg-type]


def test_timestamps_are_aware_and_naive_ones_refused() -> None:
    ts = decode("2026-11-22T00:48:01.123Z", Timestamp, "t")
    assert ts.tzinfo is not None and ts.utcoffset() == UTC.utcoffset(None)
    assert ts.microsecond == 123000
    with pytest.raises(ProtocolError, match="no time zone"):
        decode("2026-11-22T00:48:01.123", Timestamp, "t")


class _Inner(msgspec.Struct):
    b: uuid.UUID


class _Outer(msgspec.Struct):
    a: _Inner
    c: str


def test_missing_and_mistyped_fields_name_their_path() -> None:
    with pytest.raises(ProtocolError, match=r"value\.a\.b: expected a UUID"):
        decode({"a": {"b": "not-a-uuid"}, "c": "x"}, _Outer, "value")
    with pytest.raises(ProtocolError, match=r"value\.c: required field is missing"):
        decode({"a": {"b": REF}}, _Outer, "value")
    with pytest.raises(ProtocolError, match=r"response: expected an object"):
        decode([1], _Outer, "response")


def _transfer(**over: object) -> dict[str, object]:
    value: dict[str, object] = {
        "transferRef": REF,
        "requestedAt": "2026-11-22T00:48:01.123Z",
        "decidedAt": "2026-11-22T00:48:01.125Z",
        "stage": "PrincipalReserved",
        "revision": 2,
        "sourceAccountRef": REF,
        "sourceEndpointRef": REF,
        "sourceHoldingRef": REF,
        "destination": {
            "kind": "internal-endpoint",
            "accountRef": REF,
            "endpointRef": REF,
            "holdingRef": REF,
        },
        "valueUnit": {"kind": "fiat", "currency": "NGN"},
        "amountMinorUnits": "150050",
        "requestedBy": REF,
        "materialFingerprint": "fp:transfer-initiation-material:ab",
    }
    value.update(over)
    return value


def test_envelope_keeps_every_receipt_once_with_its_source() -> None:
    r1, r2 = str(uuid.uuid4()), str(uuid.uuid4())
    data = {
        "status": 202,
        "body": {
            "transfer": {
                "value": _transfer(),
                "freshness": "Current",
                "visibility": "Full",
                "evidence": [{"receiptRef": r1, "source": "EngineRuntime"}],
            }
        },
        "evidence": [{"receiptRef": r1}, {"receiptRef": r2}],
    }
    result = parse_envelope(data, 202).read(Transfer, "transfer")
    assert result.value.amount_minor_units == 150050
    assert result.value.transfer_ref == uuid.UUID(REF)
    assert [(str(e.receipt_ref), e.source) for e in result.evidence] == [
        (r1, "EngineRuntime"),
        (r2, None),
    ]
    assert result.freshness == "Current"


def test_a_decimal_amount_in_a_transfer_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match=r"amountMinorUnits"):
        decode(_transfer(amountMinorUnits="1500.50"), Transfer, "transfer.value")


def test_a_null_reads_as_absent_and_a_ref_as_uuid_reads_it_without_touching_the_answer() -> None:
    braced = "{" + REF.upper() + "}"
    value = _transfer(decidedAt=None, requestedBy=braced, materialFingerprint=None)
    transfer = decode(value, Transfer, "transfer.value")
    assert transfer.decided_at is None and transfer.material_fingerprint is None
    assert transfer.requested_by == uuid.UUID(REF)
    assert value["requestedBy"] == braced and value["decidedAt"] is None


def test_a_required_member_sent_as_null_is_named_as_null() -> None:
    with pytest.raises(ProtocolError, match=r"transfer\.value\.stage: expected a string, got null"):
        decode(_transfer(stage=None), Transfer, "transfer.value")
    with pytest.raises(ProtocolError, match=r"transfer\.value\.sourceHoldingRef: expected a UUID"):
        decode(_transfer(sourceHoldingRef="{not-a-uuid}"), Transfer, "transfer.value")
