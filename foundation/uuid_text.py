"""UUIDs read from text, at the rate a rebuild or a catch-up reads them.

Every ref on the wire (`transferRef`, `holdingRef`, ...) is a UUID in text, several per
delivery and per posting, and the standard library's `uuid.UUID(text)` is pure Python (about
2.4 us a call here, the largest single item of a delivery body's reading). msgspec, already the
JSON parser of the payload reader, parses the canonical forms (36 characters with hyphens, or 32
hex digits) in C in about a third of that. It accepts a subset of what the standard library
accepts, so anything it refuses is handed to `uuid.UUID` as before: the outcome of every text,
value or `ValueError`, is the standard library's.
"""

from __future__ import annotations

import uuid

import msgspec


def uuid_from_text(text: str) -> uuid.UUID:
    """The UUID `text` spells, exactly as `uuid.UUID(text)` reads it; `ValueError` if none."""
    try:
        return msgspec.convert(text, uuid.UUID)
    except msgspec.ValidationError:
        return uuid.UUID(text)
