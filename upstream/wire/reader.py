"""Typed field access over decoded JSON, failing with the exact path of what was wrong.

The wire is converted to our types here and only here: amounts from digit strings to int
minor units, `*Ref` fields to UUID, timestamps to aware datetimes. Anything else is a
`ProtocolError` naming the field, so a provider change shows up as one clear line rather than
a KeyError deep inside a worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

from foundation.money import AmountError, parse_minor_units
from foundation.uuid_text import uuid_from_text
from upstream.errors import ProtocolError


def _describe(value: object) -> str:
    """Name a JSON value's type for an error message, without echoing long content."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def format_minor_units(amount: int, where: str = "amount") -> str:
    """Turn our int minor units into the wire's digit string, refusing negatives and non-ints."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise ValueError(f"{where}: expected a non-negative int of minor units, got {amount!r}")
    return str(amount)


def parse_timestamp(value: object, where: str) -> datetime:
    """Turn an ISO 8601 string into an aware datetime; a naive one is refused, not assumed UTC."""
    if not isinstance(value, str):
        raise ProtocolError(f"{where}: expected an ISO 8601 timestamp, got {_describe(value)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ProtocolError(
            f"{where}: expected an ISO 8601 timestamp, got {_describe(value)}"
        ) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ProtocolError(f"{where}: timestamp {value!r} carries no time zone")
    return parsed


def parse_uuid(value: object, where: str) -> UUID:
    """Turn a `*Ref` string into a UUID."""
    if not isinstance(value, str):
        raise ProtocolError(f"{where}: expected a UUID string, got {_describe(value)}")
    try:
        return uuid_from_text(value)
    except ValueError:
        raise ProtocolError(f"{where}: expected a UUID string, got {_describe(value)}") from None


class Fields:
    """A JSON object with a path, read field by field with the expected type.

    Optional readers (`opt_*`) accept a missing field and an explicit null alike, because the
    spec marks fields "present only when ..." without saying which of the two it means.
    """

    __slots__ = ("_data", "path")

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, dict):
            raise ProtocolError(f"{path}: expected an object, got {_describe(data)}")
        self._data: Mapping[str, object] = data
        self.path = path

    def _where(self, name: str) -> str:
        return f"{self.path}.{name}"

    def has(self, name: str) -> bool:
        """True when the field is present and not null."""
        return self._data.get(name) is not None

    def as_dict(self) -> dict[str, object]:
        """A shallow copy of the object as decoded, to keep or pass back untouched."""
        return dict(self._data)

    def raw(self, name: str) -> object:
        """The field as decoded, for shapes the spec does not show; required."""
        if name not in self._data:
            raise ProtocolError(f"{self._where(name)}: required field is missing")
        return self._data[name]

    def opt_raw(self, name: str) -> object | None:
        """The field as decoded, or None."""
        return self._data.get(name)

    def text(self, name: str) -> str:
        """A required string."""
        value = self.raw(name)
        if not isinstance(value, str):
            raise ProtocolError(f"{self._where(name)}: expected a string, got {_describe(value)}")
        return value

    def opt_text(self, name: str) -> str | None:
        """An optional string."""
        return self.text(name) if self.has(name) else None

    def integer(self, name: str) -> int:
        """A required JSON integer (booleans are not integers here)."""
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProtocolError(f"{self._where(name)}: expected an integer, got {_describe(value)}")
        return value

    def opt_integer(self, name: str) -> int | None:
        """An optional JSON integer."""
        return self.integer(name) if self.has(name) else None

    def flag(self, name: str) -> bool:
        """A required boolean."""
        value = self.raw(name)
        if not isinstance(value, bool):
            raise ProtocolError(f"{self._where(name)}: expected a boolean, got {_describe(value)}")
        return value

    def opt_flag(self, name: str) -> bool | None:
        """An optional boolean."""
        return self.flag(name) if self.has(name) else None

    def ref(self, name: str) -> UUID:
        """A required UUID reference."""
        return parse_uuid(self.raw(name), self._where(name))

    def opt_ref(self, name: str) -> UUID | None:
        """An optional UUID reference."""
        return self.ref(name) if self.has(name) else None

    def timestamp(self, name: str) -> datetime:
        """A required aware timestamp."""
        return parse_timestamp(self.raw(name), self._where(name))

    def opt_timestamp(self, name: str) -> datetime | None:
        """An optional aware timestamp."""
        return self.timestamp(name) if self.has(name) else None

    def amount(self, name: str) -> int:
        """A required amount in int minor units: a string of decimal digits, nothing else (a
        sign, a point, an exponent or a JSON number would mean guessing at money)."""
        try:
            return parse_minor_units(self.raw(name))
        except AmountError as exc:
            raise ProtocolError(f"{self._where(name)}: {exc}") from exc

    def obj(self, name: str) -> Fields:
        """A required nested object."""
        return Fields(self.raw(name), self._where(name))

    def opt_obj(self, name: str) -> Fields | None:
        """An optional nested object."""
        return self.obj(name) if self.has(name) else None

    def array(self, name: str) -> list[object]:
        """A required array, elements as decoded."""
        value = self.raw(name)
        if not isinstance(value, list):
            raise ProtocolError(f"{self._where(name)}: expected an array, got {_describe(value)}")
        return value

    def objs(self, name: str) -> list[Fields]:
        """A required array of objects."""
        where = self._where(name)
        return [Fields(item, f"{where}[{i}]") for i, item in enumerate(self.array(name))]

    def texts(self, name: str) -> tuple[str, ...]:
        """A required array of strings."""
        out: list[str] = []
        for i, item in enumerate(self.array(name)):
            if not isinstance(item, str):
                raise ProtocolError(
                    f"{self._where(name)}[{i}]: expected a string, got {_describe(item)}"
                )
            out.append(item)
        return tuple(out)

    def refs(self, name: str) -> tuple[UUID, ...]:
        """A required array of UUID references."""
        return tuple(
            parse_uuid(item, f"{self._where(name)}[{i}]") for i, item in enumerate(self.array(name))
        )

    def opt_objs(self, name: str) -> list[Fields]:
        """An array of objects; [] when absent."""
        return self.objs(name) if self.has(name) else []

    def opt_texts(self, name: str) -> tuple[str, ...]:
        """An array of strings; () when absent."""
        return self.texts(name) if self.has(name) else ()

    def opt_refs(self, name: str) -> tuple[UUID, ...]:
        """An array of UUID references; () when absent."""
        return self.refs(name) if self.has(name) else ()

    def opaque(self, name: str) -> tuple[object, ...]:
        """An array whose element shape the spec does not show, kept as decoded; [] if absent."""
        return tuple(self.array(name)) if self.has(name) else ()
