"""Identifiers and fingerprints.

UUIDs come from a seeded generator so that a scenario replays with the same references. The
ledger keeps them as 128-bit integers (compact, and ordered exactly like their text form), so
conversion lives here too.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from typing import Any

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_VERSION_MASK = ~(0xF << 76) & ~(0x3 << 62)
_VERSION_BITS = (0x4 << 76) | (0x2 << 62)


def uuid_text(value: int) -> str:
    """Canonical lower-case text of a 128-bit uuid integer."""
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid_int(text: str) -> int:
    """Inverse of ``uuid_text`` (caller has checked ``is_uuid``)."""
    return int(text.replace("-", ""), 16)


def is_uuid(value: object) -> bool:
    """Lower- or upper-case canonical uuid text; the wire form every ``*Ref`` uses."""
    return isinstance(value, str) and _UUID_RE.match(value.lower()) is not None


def as_v4(bits: int) -> int:
    """Stamp version 4 and the RFC variant onto 128 random bits."""
    return (bits & _VERSION_MASK) | _VERSION_BITS


class IdSource:
    """Seeded uuid4 generator shared by everything that mints a reference."""

    __slots__ = ("_lock", "_rng")

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(f"ids:{seed}")
        self._lock = threading.Lock()

    def new_int(self) -> int:
        with self._lock:
            return as_v4(self._rng.getrandbits(128))

    def new(self) -> str:
        return uuid_text(self.new_int())

    def digits(self, count: int) -> str:
        """Decimal digits for account numbers, from the same seeded stream."""
        with self._lock:
            return "".join(str(self._rng.randrange(10)) for _ in range(count))


def canonical_json(value: Any) -> bytes:
    """Key-sorted compact JSON: equal material gives equal bytes whatever the key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fingerprint(kind: str, value: Any) -> str:
    """``fp:<kind>:<sha256 hex>`` over canonical JSON, the form the spec shows."""
    return f"fp:{kind}:{hashlib.sha256(canonical_json(value)).hexdigest()}"
