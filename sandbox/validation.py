"""Request checks shared by the gateway routes; every failure is a 400 ``InvalidInput``.

Bodies are parsed by hand rather than by framework models so that each refusal comes back in
the gateway's own error wrapper, with a message that names the offending member.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sandbox.envelopes import invalid_input
from sandbox.ids import is_uuid
from sandbox.units import unit_key

_AMOUNT_RE = re.compile(r"^[1-9][0-9]*$")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    if not raw:
        raise invalid_input("A JSON object body is required.")
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise invalid_input("The body is not valid JSON.") from exc
    if not isinstance(value, dict):
        raise invalid_input("The body must be a JSON object.")
    return value


def require(body: Mapping[str, Any], name: str) -> Any:
    if name not in body or body[name] is None:
        raise invalid_input(f"`{name}` is required.")
    return body[name]


def require_uuid(body: Mapping[str, Any], name: str) -> str:
    value = require(body, name)
    if not is_uuid(value):
        raise invalid_input(f"`{name}` must be a UUID string.")
    return str(value).lower()


def require_value_unit(body: Mapping[str, Any], name: str = "valueUnit") -> str:
    """The unit's key (sandbox.units): a fiat currency, or a non-fiat unit's kind and asset."""
    unit = require(body, name)
    if not isinstance(unit, dict):
        raise invalid_input(f"`{name}` must be an object.")
    try:
        return unit_key(unit, name)
    except ValueError as exc:
        raise invalid_input(str(exc)) from None


def require_amount(body: Mapping[str, Any], name: str = "amountMinorUnits") -> int:
    """A positive amount as a canonical string of digits (no sign, no leading zeros)."""
    value = require(body, name)
    if not isinstance(value, str) or not _AMOUNT_RE.match(value):
        raise invalid_input(f"`{name}` must be a string of decimal digits greater than zero.")
    return int(value)


def refuse_fields(body: Mapping[str, Any], names: tuple[str, ...]) -> None:
    """Fields the platform derives itself: supplying them is refused, not ignored."""
    supplied = [n for n in names if n in body]
    if supplied:
        raise invalid_input(
            "These fields are derived by the platform and must not be supplied: "
            + ", ".join(supplied)
        )


def page_size(raw: str | None, default: int, cap: int, over_cap: str = "reject") -> int:
    """The page size a request gets: its own, the default when absent, at most ``cap``.

    Above the cap a provider either refuses (``over_cap="reject"``, 400) or serves the cap
    without saying so (``"clamp"``): the gateway spec shows neither, so the variant picks.
    The default never exceeds the cap (a provider would not default to a size it refuses).
    """
    if raw is None or raw == "":
        return min(default, cap)
    if not raw.isdigit() or int(raw) < 1:
        raise invalid_input(f"`pageSize` must be a whole number from 1 to {cap}.")
    size = int(raw)
    if size > cap:
        if over_cap == "clamp":
            return cap
        raise invalid_input(f"`pageSize` must be an integer from 1 to {cap}.")
    return size


def query_uuid(query: Mapping[str, str], name: str, *, required: bool = True) -> str | None:
    value = query.get(name)
    if value is None or value == "":
        if required:
            raise invalid_input(f"Query parameter `{name}` is required.")
        return None
    if not is_uuid(value):
        raise invalid_input(f"Query parameter `{name}` must be a UUID.")
    return value.lower()
