"""What a stored transfer's status means, decided only from `is_terminal` and `is_successful`.

The provider's status and stage names beyond the few its spec shows are its own to choose
(`completed` or `settled`, `failed` or `rejected`, a `held` that is still waiting), so nothing
in matching, drift or reports compares a status with a name we guessed. The status read's
`isTerminal` and `isSuccessful` say it all; the names are stored verbatim for people to read.
Denial is the one outcome the spec names (`reservation_denied`, stage `ReservationDenied`), and
it is told apart by that name because it differs in kind: nothing moved and nothing is notified.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Table, and_, or_, true

from reconciliation.matching.vocabulary import STATUS_DENIED


def settled(t: Table) -> ColumnElement[bool]:
    """SQL: the gateway says the transfer is done and succeeded: the money moved."""
    return and_(t.c.is_terminal == true(), t.c.is_successful == true())


def ended_unmoved(t: Table) -> ColumnElement[bool]:
    """SQL: the gateway says the transfer is done and did not succeed (denied or failed)."""
    return and_(t.c.is_terminal == true(), or_(t.c.is_successful.is_(None), ~t.c.is_successful))


def still_moving(t: Table) -> ColumnElement[bool]:
    """SQL: the gateway has answered and says the transfer is not done yet (whatever its name)."""
    return and_(t.c.is_terminal.is_not(True), t.c.status.is_not(None))


def denied(t: Table) -> ColumnElement[bool]:
    """SQL: denied at reservation (the spec's own name): nothing moved, nothing will."""
    return and_(t.c.status == STATUS_DENIED, t.c.is_terminal == true())


@dataclass(frozen=True, slots=True)
class TransferState:
    """A stored transfer's status, as the drift rules read it in Python."""

    status: str | None
    is_terminal: bool
    is_successful: bool | None

    @property
    def settled(self) -> bool:
        """Done and successful."""
        return self.is_terminal and self.is_successful is True

    @property
    def ended_unmoved(self) -> bool:
        """Done and not successful."""
        return self.is_terminal and self.is_successful is not True

    @property
    def still_moving(self) -> bool:
        """Answered, and not done yet."""
        return not self.is_terminal and self.status is not None
