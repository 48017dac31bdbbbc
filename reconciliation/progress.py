"""How a long pass reports its progress without knowing who is watching.

The CLI shows Rich progress bars in a terminal; a worker shows nothing. The pass talks to this
protocol only, so `reconciliation/` never imports a terminal library.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives the phases of a pass and how far each has got."""

    def phase(self, name: str, total: int) -> None:
        """A phase starts; `total` is its amount of work (rows), 0 when unknown."""

    def advance(self, amount: int) -> None:
        """Some of the current phase's work is done."""

    def done(self) -> None:
        """The current phase is finished."""


class SilentProgress:
    """The progress of a pass nobody is watching (workers, tests)."""

    def phase(self, name: str, total: int) -> None:
        return None

    def advance(self, amount: int) -> None:
        return None

    def done(self) -> None:
        return None
