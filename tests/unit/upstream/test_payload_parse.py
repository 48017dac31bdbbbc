"""The reader's fast JSON parse gives every body the outcome the standard library alone gives.

`upstream.webhooks.payloads.reader` parses with msgspec and falls back to `json.loads` for what
msgspec refuses. Each body here is read twice through the public reader: as it is, and with the
parse replaced by the standard library's alone (the reader before msgspec). The two outcomes
(notification, or every problem with its wording) must be equal, for the bodies where the two
parsers differ in what they accept and for generated documents full of decimals, large
integers, duplicate keys and text outside ASCII.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import upstream.webhooks.payloads.reader as reader_module
from upstream.webhooks.payloads import DeliveryNotification, configured_reader

READER = configured_reader()

#: A body the `recon` shape reads, with `{amount}` left to fill in (JSON text).
TEMPLATE = (
    '{{"id":"evt-1","event":"PAYMENT_RECEIVED","createdAt":"2026-11-22T00:48:01.123Z",'
    '"data":{{"holdingRef":"0b8f5a52-8d1c-4c3e-9d57-333333333333","amount":{amount},'
    '"currency":"NGN","status":"SUCCESSFUL","narration":{narration}}}}}'
)


def recon(amount: str, narration: str = '"rent"') -> bytes:
    return TEMPLATE.format(amount=amount, narration=narration).encode()


def standard_library_only(body: bytes) -> Any:
    return json.loads(body, parse_float=Decimal, parse_constant=reader_module._refuse_constant)


def both_ways(body: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = READER.read(body, {})
    with monkeypatch.context() as patched:
        patched.setattr(reader_module, "_parse", standard_library_only)
        plain = READER.read(body, {})
    return fast, plain


#: Bodies on which msgspec and the standard library disagree about what is JSON, and bodies
#: whose numbers a float would change.
EDGES = [
    recon('"1500.50"'),
    recon("1500.50"),
    recon("1500.5000000000000000000001"),
    recon("1.5E3"),
    recon("123456789012345678901234567890"),
    recon("NaN"),
    recon("Infinity"),
    recon("-0.0"),
    recon('"1500.50"', '"caf\\u00e9 \\ud800"'),  # an escaped lone surrogate: stdlib reads it
    recon('"1500.50"', '"caf\xc3\xa9"'),
    b"\xef\xbb\xbf" + recon('"1500.50"'),  # a UTF-8 byte order mark: stdlib reads it
    recon('"1500.50"').decode().encode("utf-16"),  # UTF-16: stdlib reads it
    recon('"1500.50"', '"\xff"'),
    recon('"1500.50"', '"\xed\xa0\x80"'),
    recon('"1500.50"') + b" trailing",
    b'{"id":"a","id":"b","event":"X","createdAt":"2026-11-22T00:48:01Z"}',
    b"",
    b"[1, 2]",
    b'{"a": 01}',
]


@pytest.mark.parametrize("body", EDGES)
def test_edge_bodies_have_the_standard_librarys_outcome(
    body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, plain = both_ways(body, monkeypatch)
    assert fast == plain


def test_a_decimal_amount_is_read_exactly_by_the_fast_parse() -> None:
    found = READER.read(recon("1500.5000000000000000000001"), {})
    assert not isinstance(found, DeliveryNotification)  # finer than the currency: refused
    exact = READER.read(recon("1500.50"), {})
    assert isinstance(exact, DeliveryNotification) and exact.amount_minor == 150_050


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.decimals(allow_nan=False, allow_infinity=False, places=None).map(str)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300)
@given(
    extra=JSON_VALUES,
    amount=st.decimals(allow_nan=False, allow_infinity=False, places=None),
    duplicate=st.booleans(),
)
def test_generated_bodies_have_the_standard_librarys_outcome(
    extra: Any, amount: Decimal, duplicate: bool
) -> None:
    data = json.dumps({"extra": extra})[1:-1]
    body = recon(str(amount)).replace(b'"data":{', b'"data":{' + data.encode() + b",")
    if duplicate:
        body = body.replace(b'"event":', b'"event":"OTHER","event":')
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, plain = both_ways(body, monkeypatch)
    assert fast == plain
