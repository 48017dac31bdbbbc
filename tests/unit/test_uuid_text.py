"""`uuid_from_text` reads every text exactly as `uuid.UUID(text)` does, value or error.

It parses with msgspec first and hands what msgspec refuses to the standard library, so the
two can only differ if msgspec accepts a text the standard library refuses, or reads one to
another value. The texts here are the forms each accepts (hyphenated, bare hex, braces, the
`urn:uuid:` prefix, either case) and near misses of them; hypothesis adds arbitrary text and
every canonical form of random UUIDs.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foundation import uuid_from_text

CANONICAL = "0b8f5a52-8d1c-4c3e-9d57-333333333333"
FORMS = [
    CANONICAL,
    CANONICAL.upper(),
    CANONICAL.replace("-", ""),
    "{" + CANONICAL + "}",
    "urn:uuid:" + CANONICAL,
    " " + CANONICAL,
    CANONICAL + "\n",
    CANONICAL[:-1],
    CANONICAL + "3",
    CANONICAL[:-1] + "g",
    "0b8f5a528-d1c-4c3e-9d57-333333333333",
    CANONICAL.replace("-", "_"),
    "+" + CANONICAL.replace("-", "")[1:],
    "",
    "not a uuid",
]


def _standard(text: str) -> uuid.UUID | str:
    try:
        return uuid.UUID(text)
    except ValueError:
        return "refused"


def _ours(text: str) -> uuid.UUID | str:
    try:
        found = uuid_from_text(text)
    except ValueError:
        return "refused"
    assert type(found) is uuid.UUID
    return found


@pytest.mark.parametrize("text", FORMS)
def test_each_form_reads_as_the_standard_library_reads_it(text: str) -> None:
    assert _ours(text) == _standard(text)


@given(st.text(max_size=48))
def test_arbitrary_text_reads_as_the_standard_library_reads_it(text: str) -> None:
    assert _ours(text) == _standard(text)


@given(st.uuids(), st.sampled_from(["str", "hex", "upper", "braces", "urn"]))
def test_every_form_of_a_uuid_reads_back_to_it(value: uuid.UUID, form: str) -> None:
    text = {
        "str": str(value),
        "hex": value.hex,
        "upper": str(value).upper(),
        "braces": "{" + str(value) + "}",
        "urn": value.urn,
    }[form]
    assert uuid_from_text(text) == value
