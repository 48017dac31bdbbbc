"""A string that refuses to show itself.

Credentials travel through settings, clients and CLI output; wrapping them means the only way
to see one is to call `reveal()` at the exact place it is sent, which is easy to audit.
"""

from __future__ import annotations

from typing import Final

#: What a masked secret prints as. Keeps the last characters out too: even a suffix narrows a
#: brute force and shows up in screenshots of dashboards.
MASK: Final = "********"


class Secret:
    """Holds a secret value; str(), repr() and format() show only the mask."""

    __slots__ = ("_name", "_value")

    def __init__(self, value: str, *, name: str = "secret") -> None:
        self._value = value
        self._name = name

    def reveal(self) -> str:
        """The value itself: call only where it goes on the wire or into the cipher."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self._name}={MASK})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling would copy the value into queues and caches where nobody looks for it.
        raise TypeError("Secret values are not picklable; pass the settings name instead")
