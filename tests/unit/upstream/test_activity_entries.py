"""Activity entries read in bulk: same postings and same named errors as the field reader."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from upstream.errors import ProtocolError
from upstream.wire.balances import Posting, parse_postings
from upstream.wire.common import ValueUnit
from upstream.wire.decoding import decode

PATH = "value.entries"


def entry(**changes: Any) -> dict[str, Any]:
    """One well-formed entry, with fields replaced (or removed when given as ...)."""
    base: dict[str, Any] = {
        "postedAt": "2026-11-22T00:48:01.120Z",
        "receiptRef": str(uuid.uuid4()),
        "journalRef": str(uuid.uuid4()),
        "lineRef": str(uuid.uuid4()),
        "journalKind": "transfer_settlement",
        "postingSide": "credit",
        "balanceEffect": "increase",
        "amountMinorUnits": "500",
        "valueUnit": {"kind": "fiat", "currency": "NGN"},
        "ledgerPartition": "customer_liability",
        "ledgerNormalSide": "credit_normal",
    }
    for name, value in changes.items():
        if value is ...:
            base.pop(name)
        else:
            base[name] = value
    return base


def one_by_one(items: list[Any]) -> tuple[Any, ...]:
    """What the field reader makes of the same entries."""
    return tuple(decode(item, Posting, f"{PATH}[{i}]") for i, item in enumerate(items))


def test_a_page_reads_to_the_same_postings_as_entry_by_entry() -> None:
    items = [entry(), entry(amountMinorUnits="0"), entry(ledgerPartition=None)]
    items.append(entry(ledgerNormalSide=..., valueUnit={"kind": "fiat", "currency": "USD"}))
    postings = parse_postings(items, PATH)
    assert postings == one_by_one(items)
    assert postings[0].posted_at == datetime(2026, 11, 22, 0, 48, 1, 120000, tzinfo=UTC)
    assert postings[0].receipt_ref == uuid.UUID(items[0]["receiptRef"])
    assert postings[0].amount_minor_units == 500 and postings[1].amount_minor_units == 0
    assert postings[2].ledger_partition is None and postings[3].ledger_normal_side is None
    assert postings[0].value_unit == ValueUnit.fiat("NGN")
    assert str(postings[3].value_unit) == "USD"
    # Entries of one unit share one ValueUnit: the store names its currency once per page.
    assert postings[0].value_unit is postings[1].value_unit


def test_an_empty_page_is_no_postings() -> None:
    assert parse_postings([], PATH) == ()


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"amountMinorUnits": "-5"}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        ({"amountMinorUnits": "12\n"}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        ({"amountMinorUnits": 500}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        ({"amountMinorUnits": "5.00"}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        # Digits of other scripts pass str.isdigit(); money is ASCII digits only.
        ({"amountMinorUnits": "\u0661\u0662"}, r"entries\[1\]\.amountMinorUnits: expected an"),
        ({"amountMinorUnits": "5\u00b2"}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        ({"amountMinorUnits": ""}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        ({"amountMinorUnits": " 5"}, r"entries\[1\]\.amountMinorUnits: expected an amount"),
        ({"lineRef": "not-a-uuid"}, r"entries\[1\]\.lineRef: expected a UUID"),
        ({"receiptRef": ...}, r"entries\[1\]\.receiptRef: required field is missing"),
        ({"postedAt": "2026-11-22T00:48:01"}, r"entries\[1\]\.postedAt: .* no time zone"),
        ({"postedAt": "yesterday"}, r"entries\[1\]\.postedAt: expected an ISO 8601"),
        ({"journalKind": None}, r"entries\[1\]\.journalKind: expected a string"),
        ({"valueUnit": "NGN"}, r"entries\[1\]\.valueUnit: expected an object"),
        ({"valueUnit": {"currency": "NGN"}}, r"entries\[1\]\.valueUnit\.kind: required field"),
        ({"ledgerPartition": 7}, r"entries\[1\]\.ledgerPartition: expected a string"),
    ],
)
def test_a_bad_field_is_named_exactly(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        parse_postings([entry(), entry(**changes)], PATH)


def test_an_entry_that_is_not_an_object_is_named() -> None:
    with pytest.raises(ProtocolError, match=r"value\.entries\[0\]: expected an object"):
        parse_postings(["x"], PATH)


@pytest.mark.parametrize(
    "posted_at",
    [
        "2026-11-22t00:48:01.120z",  # the bulk decoder would take it; the reader refuses
        "2026-11-22T00:48:01.1234567Z",  # beyond microseconds: the reader's rounding, not msgspec's
        "2026-11-22T00:48:01+01",  # an offset only the reader accepts
    ],
)
def test_timestamps_mean_what_the_field_reader_says(posted_at: str) -> None:
    items = [entry(postedAt=posted_at)]
    try:
        expected = one_by_one(items)
    except ProtocolError as refused:
        with pytest.raises(ProtocolError, match="postedAt") as got:
            parse_postings(items, PATH)
        # The page's error is the reader's, naming the entry's lineRef besides.
        assert str(got.value) == f"{refused} (the entry with lineRef {items[0]['lineRef']})"
    else:
        assert parse_postings(items, PATH) == expected


def test_unknown_fields_are_ignored_like_the_reader_does() -> None:
    items = [entry(somethingNew={"a": 1})]
    assert parse_postings(items, PATH) == one_by_one(items)


@pytest.mark.parametrize(
    "posted_at", ["2026-11-22T05:48:01.120+05:00", "2026-11-22T00:48:01-00:00", "2026-11-22T00:48Z"]
)
def test_the_bulk_read_takes_every_offset_the_reader_takes(posted_at: str) -> None:
    """The bulk read tells an aware timestamp by its `tzinfo` alone (see `read_timestamp`):
    whatever offset `fromisoformat` read, it is the entry's posting, read in bulk."""
    items = [entry(postedAt=posted_at)]
    assert parse_postings(items, PATH) == one_by_one(items)


def test_the_bulk_read_refuses_a_timestamp_without_offset() -> None:
    with pytest.raises(ProtocolError, match=r"entries\[1\]\.postedAt: .* no time zone"):
        parse_postings([entry(), entry(postedAt="2026-11-22T00:48:01.120")], PATH)
