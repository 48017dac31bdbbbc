"""Fee totals and lines in each shape a provider may send, and the ones recon cannot read."""

from __future__ import annotations

import pytest

from upstream.wire.fees import (
    MIXED_KINDS,
    bearer_of,
    fee_instruction,
    posting_refs,
    read_fees,
)

NGN = {"kind": "fiat", "currency": "NGN"}

FLAT = {
    "kind": "application_fee",
    "bearer": "sender_pays",
    "amountMinorUnits": "2500",
    "valueUnit": NGN,
}
NESTED = {
    "feeKind": "application_fee",
    "paidBy": "sender",
    "amount": {"minorUnits": "2500", "unit": NGN},
}
MAJOR = {"type": "application_fee", "bearer": "sender_pays", "amount": "25.00", "currency": "NGN"}


@pytest.mark.parametrize("element", [FLAT, NESTED, MAJOR], ids=["flat", "nested", "major"])
def test_each_shape_reads_as_the_same_fee(element: dict[str, object]) -> None:
    reading = read_fees([element], [dict(element, leg="debit", holdingRef="h-1")])

    assert reading.readable
    assert reading.charged_in("NGN") == 2500
    assert reading.bearer == "sender_pays"
    assert reading.kind == "application_fee"
    assert reading.lines[0].leg == "debit"
    assert reading.lines[0].holding_ref == "h-1"


@pytest.mark.parametrize(
    "element",
    [
        {"kind": "application_fee", "amountMinorUnits": "25.5", "valueUnit": NGN},
        {"kind": "application_fee", "amount": "25.001", "currency": "NGN"},
        {"kind": "application_fee", "amountMinorUnits": "2500"},
        {"kind": "application_fee", "fee": 25},
        "2500 NGN",
    ],
    ids=["decimal-minor", "too-precise-major", "no-unit", "no-amount", "not-an-object"],
)
def test_an_element_recon_cannot_read_makes_the_fee_unknown_and_is_kept(element: object) -> None:
    reading = read_fees([FLAT, element], [])

    assert reading.charged_in("NGN") is None
    assert reading.unreadable == (element,)
    assert len(reading.totals) == 1


def test_no_fee_is_zero_not_unknown() -> None:
    assert read_fees([], []).charged_in("NGN") == 0


def test_amounts_of_other_units_are_never_added() -> None:
    gas = {
        "kind": "gas_fee",
        "amountMinorUnits": "7",
        "valueUnit": {"kind": "asset", "asset": "ETH"},
    }
    reading = read_fees([FLAT, gas], [])

    assert reading.charged_in("NGN") == 2500
    assert reading.charged_in("ETH") == 7
    assert reading.charged_in(None) is None
    assert reading.kind == MIXED_KINDS


def test_lines_stand_in_for_absent_totals() -> None:
    debit = dict(FLAT, bearer="split", amountMinorUnits="60", leg="debit")
    withheld = dict(FLAT, bearer="split", amountMinorUnits="40", leg="withholding")

    reading = read_fees([], [debit, withheld])

    assert reading.charged_in("NGN") == 100
    assert reading.bearer == "split"


@pytest.mark.parametrize(
    ("word", "bearer"),
    [
        ("sender_pays", "sender_pays"),
        ("sender", "sender_pays"),
        ("receiver", "receiver_pays"),
        ("RECIPIENT", "receiver_pays"),
        ("application", "application_pays"),
        ("split", "split"),
        ("nobody", None),
        (7, None),
    ],
)
def test_bearer_words(word: object, bearer: str | None) -> None:
    assert bearer_of(word) == bearer


def test_an_unknown_bearer_is_refused_before_anything_is_sent() -> None:
    assert fee_instruction("split") == {"kind": "request_application_fee", "bearer": "split"}
    with pytest.raises(ValueError, match="not one of"):
        fee_instruction("everyone")


def test_the_postings_fee_lines_name_are_read_in_every_shape_and_at_any_depth() -> None:
    """Where a provider posts a fee under a receipt of its own, its lines may name that receipt
    (or the line) under any member ending in receiptRef or lineRef: each is a posting ref."""
    lines = [
        {"kind": "application_fee", "amountMinorUnits": "100", "receiptRef": "r-flat"},
        {"feeKind": "application_fee", "posting": {"receiptRef": "r-nested", "lineRef": "l-1"}},
        {"type": "application_fee", "amount": "1.00", "postingReceiptRef": "r-major"},
        {"evidence": [{"receiptRef": "r-evidence"}], "receiptRef": None, "lineRef": 7},
        {"holdingRef": "not-a-posting", "amountMinorUnits": "5"},
    ]
    assert posting_refs(lines) == ("l-1", "r-evidence", "r-flat", "r-major", "r-nested")
    assert posting_refs([]) == ()
