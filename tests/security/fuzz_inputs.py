"""Generated hostile inputs for the fuzz suite (tests/security/test_fuzz.py), and its bounds.

Each strategy mixes what hypothesis makes up with the values that broke recon before (numbers
whose expansion is gigabytes, digits `int` refuses, NULs, invalid UTF-8, bidi overrides,
numbers past 2**63), so even a short run tries every known class of attack.

The number of examples each fuzz test runs is RECON_FUZZ_EXAMPLES (default FUZZ_EXAMPLES, a
few seconds in all, so `make test` runs it); `RECON_FUZZ_EXAMPLES=2000 pytest
tests/security/test_fuzz.py` is the long run on demand.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Examples per fuzz test by default: enough to try every listed attack class a few times,
#: few enough that the suite takes seconds.
FUZZ_EXAMPLES: Final = 40
#: Slowest any one generated input may be answered or read, in seconds: far above the
#: milliseconds an honest input costs, far below what an expansion costs (seconds to minutes).
SECONDS_PER_INPUT: Final = 2.0

#: The fuzz tests' hypothesis settings: the count from the environment, no per-example
#: deadline (the tests assert their own bound, which includes a loaded machine's noise), no
#: example database (the tests run from a clean checkout, and the corpus is the strategies).
FUZZ: Final = settings(
    max_examples=int(os.environ.get("RECON_FUZZ_EXAMPLES", FUZZ_EXAMPLES)),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: JSON numbers, as raw text, that cost far more than their size to expand or convert.
COSTLY_NUMBERS: Final = (
    b"1e999999999999",
    b"-1e999999999999",
    b"1e5000000",
    b"1e-999999999",
    b"1E+500000",
    b"9" * 5_000,
    b"0." + b"0" * 5_000 + b"1",
    b"123456789012345678901234567890.123456789",
    b"-0",
    b"0.00",
    b"-5.00",
)
#: Texts that broke a conversion or a store before.
HOSTILE_TEXTS: Final = (
    "²",
    "99999999999999999999",
    "9223372036854775808",
    "7" * 5_000,
    "-1",
    "0",
    "NaN",
    "1e999999999",
    "\x00",
    "a\x00b",
    "\u202egnp.exe",
    "\u200b",
    "\x1b[2J",
    "2026-01-01T00:00:00+00:00/99999999999999999999",
    "9999-12-31T23:59:59-01:00",
    "",
    " ",
    "=cmd|' /C calc'!A0",
    "\uff1d1+1",
)

hostile_text = st.one_of(
    st.sampled_from(HOSTILE_TEXTS),
    st.text(max_size=40),
    st.from_regex(r"[0-9]{1,40}", fullmatch=True),
)

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.text(max_size=30),
    st.sampled_from(HOSTILE_TEXTS),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)

#: Where a delivery's fields sit in each built-in shape; a fuzzed body fills some with
#: generated values and leaves the rest genuine.
_GENUINE: Final[dict[str, Any]] = {
    "id": "8b7e1c1a-8f0e-4f8e-9d5b-2b1c3d4e5f60",
    "event": "PAYMENT_RECEIVED",
    "type": "PAYMENT_RECEIVED",
    "eventType": "PAYMENT_RECEIVED",
    "createdAt": "2026-11-22T00:48:01.123Z",
    "timestamp": "2026-11-22T00:48:01.123Z",
    "amount": "1500.50",
    "currency": "NGN",
    "status": "SUCCESSFUL",
    "data": {
        "amount": "1500.50",
        "amountMinorUnits": "150050",
        "currency": "NGN",
        "status": "SUCCESSFUL",
        "transferRef": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        "accountNumber": "0123456789",
    },
}
#: A placeholder no generated JSON contains, replaced by a raw costly number after encoding.
_RAW: Final = "\ue000RAW\ue000"


@st.composite
def delivery_bodies(draw: st.DrawFn) -> bytes:
    """A genuine-looking body with some members replaced by generated JSON or a raw costly
    number, then possibly a few bytes overwritten (invalid UTF-8, broken syntax)."""
    doc = json.loads(json.dumps(_GENUINE))
    raw_number = draw(st.sampled_from(COSTLY_NUMBERS))
    for key in draw(st.lists(st.sampled_from(sorted(_GENUINE)), max_size=4)):
        doc[key] = _RAW if draw(st.booleans()) else draw(json_value)
    data = doc["data"] if isinstance(doc["data"], dict) else doc
    for key in draw(st.lists(st.sampled_from(sorted(_GENUINE["data"])), max_size=4)):
        data[key] = _RAW if draw(st.booleans()) else draw(json_value)
    body = json.dumps(doc).replace(json.dumps(_RAW), raw_number.decode()).encode()
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(body) - 1))
        body = body[:at] + draw(st.binary(min_size=1, max_size=3)) + body[at + 1 :]
    return body
