"""The wire read into our types: each wire type is one msgspec Struct, decoded here and only here.

A Struct names its members in snake_case and reads them camelCase (`rename="camel"`); msgspec
checks every field in C and names the path of the first that is wrong, which `decode` turns
into a `ProtocolError` naming the field (`response.body.value.entries[3].lineRef: expected a
UUID string`), so a provider change shows up as one clear line rather than a KeyError deep
inside a worker. Two wire forms need more than msgspec's own types; each is a marker type that
`_hook` reads and that type checkers see as what it holds:

- `MinorUnits`: an amount, a string of ASCII digits and nothing else (a sign, a point, an
  exponent or a JSON number would mean guessing at money; foundation.money);
- `Timestamp`: ISO 8601 with an offset, read by `datetime.fromisoformat` (msgspec's own parser
  takes a lower-case `t`/`z`, rounds past microseconds and refuses an offset of `+01`), a naive
  one refused rather than assumed UTC.

The spec marks members "present only when ...", without saying whether absent means missing or
null, so both read alike. Two such tolerances are kept by reading a repaired copy again, which
costs the answer that needs none nothing:

- a null where a member has a default reads as the member absent;
- a `*Ref` that msgspec refuses is read as `uuid.UUID` reads it (braces, `urn:uuid:`...):
  msgspec's UUIDs are a subset of the standard library's (foundation.uuid_text).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec

from foundation import MAX_AMOUNT_DIGITS, parse_minor_units, uuid_from_text
from upstream.errors import ProtocolError

T = TypeVar("T")


# msgspec checks what `_hook` returns with `isinstance(result, marker)`. A marker's metaclass
# answers that with the `__instancecheck__` of the plain type the marker reads to (bound, so
# a C call rather than a Python frame per amount and per timestamp of a catch-up): its values
# stay plain ints and datetimes, never a subclass an encoder or a driver would not know.
class _HoldsInt(type):
    __instancecheck__ = int.__instancecheck__


class _HoldsDatetime(type):
    __instancecheck__ = datetime.__instancecheck__


if TYPE_CHECKING:
    MinorUnits = int
    Timestamp = datetime
else:

    class MinorUnits(metaclass=_HoldsInt):
        """An amount in int minor units, a string of decimal digits on the wire."""

    class Timestamp(metaclass=_HoldsDatetime):
        """An aware datetime, an ISO 8601 string with an offset on the wire."""


def _hook(kind: object, value: object) -> object:
    """Read a marker: a catch-up calls this twice per entry, so the common forms are read here
    without a further call (an amount of ASCII digits no longer than any recon keeps needs no
    regex); anything else goes through foundation.money, which reads it alike or says what is
    wrong."""
    if kind is Timestamp:
        try:
            parsed = datetime.fromisoformat(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"expected an ISO 8601 timestamp, got {repr(value)[:40]}") from None
        # `fromisoformat` gives a fixed offset or none, so `tzinfo` alone says it is aware.
        if parsed.tzinfo is None:
            raise ValueError(f"timestamp {value!r} carries no time zone")
        return parsed
    if kind is MinorUnits:
        if isinstance(value, str) and len(value) <= MAX_AMOUNT_DIGITS and value.isascii():
            return int(value) if value.isdigit() else parse_minor_units(value)
        return parse_minor_units(value)
    raise NotImplementedError


#: msgspec's words for JSON types, as the messages of our errors say them.
_WORDS: Final = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "object": "an object",
    "array": "an array",
    "uuid": "a UUID string",
    "null": "null",
}
_AT: Final = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)
_STEP: Final = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_EXPECTED: Final = re.compile(r"Expected `([a-z]+)(?: \| null)?`, got `([a-z]+)`")
_MISSING: Final = re.compile(r"Object missing required field `(.+)`")
_ABSENT: Final = object()


def decode(data: object, kind: type[T], where: str) -> T:
    """`data` (decoded JSON) read as `kind`; a ProtocolError naming the path of what is wrong.

    `where` names `data` itself in the message ("response.body.value").
    """
    nulled: dict[str, str] = {}
    while True:
        try:
            return msgspec.convert(data, kind, dec_hook=_hook)
        except msgspec.ValidationError as exc:
            match = _AT.match(str(exc))
            assert match is not None
            problem, path = match.group(1), match.group(2) or ""
            missing = _MISSING.fullmatch(problem)
            if missing:
                # A required member sent as null was read as absent: say what was sent.
                path = f"{path}.{missing.group(1)}"
                problem = nulled.get(path, "required field is missing")
            else:
                repaired = _repaired(data, path, problem)
                if repaired is not _ABSENT:
                    if problem.endswith("got `null`"):
                        nulled[path] = problem
                    data = repaired
                    continue
            raise ProtocolError(f"{where}{path}: {_said(problem)}") from None


def _said(problem: str) -> str:
    if problem == "Invalid UUID":
        return "expected a UUID string"
    expected = _EXPECTED.fullmatch(problem)
    if expected:
        want, got = expected.groups()
        return f"expected {_WORDS.get(want, want)}, got {_WORDS.get(got, got)}"
    return problem


def _repaired(data: object, path: str, problem: str) -> object:
    """A copy of `data` with the member at `path` read as the spec allows, or `_ABSENT`."""
    steps: list[str | int] = [k if k else int(i) for k, i in _STEP.findall(path)]
    if not steps:
        return _ABSENT
    if problem.endswith("got `null`") and isinstance(steps[-1], str):
        return _edited(data, steps, _ABSENT)
    if problem == "Invalid UUID":
        try:
            return _edited(data, steps, str(uuid_from_text(_at(data, steps))))
        except (ValueError, TypeError):
            return _ABSENT
    return _ABSENT


def _at(data: Any, steps: list[str | int]) -> Any:
    for step in steps:
        data = data[step]
    return data


def _edited(data: Any, steps: list[str | int], value: object) -> object:
    """`data` with the member at `steps` replaced (removed for `_ABSENT`); nothing it shares
    with the caller's copy is changed (a page's entries keep their exact text)."""
    copy: Any = list(data) if isinstance(data, list) else dict(data)
    step = steps[0]
    if len(steps) > 1:
        copy[step] = _edited(data[step], steps[1:], value)
    elif value is _ABSENT:
        del copy[step]
    else:
        copy[step] = value
    return copy


def format_minor_units(amount: int, where: str = "amount") -> str:
    """Turn our int minor units into the wire's digit string, refusing negatives and non-ints."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise ValueError(f"{where}: expected a non-negative int of minor units, got {amount!r}")
    return str(amount)
