"""What matching produced: counts per rule, and the ambiguities it refused to guess."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True, slots=True)
class Ambiguity:
    """One item with several equally good counterparts: shown to a person, never guessed.

    anchor: the item whose counterparts are in doubt, as (table, id); table is 'posting',
    'notification' or 'transfer'. rivals: every counterpart in doubt, the same way.
    """

    rule: str
    anchor: tuple[str, int]
    rivals: tuple[tuple[str, int], ...]


#: Flags a rule sets on a pair it matched, for the drift rules to look at (and nothing else).
STATUS_SUSPECT: Final = 1  # the notification says money moved; the transfer is not completed
MONEY_SUSPECT: Final = 2  # amount or currency differ between the posting and its counterparts


@dataclass(slots=True)
class MatchTally:
    """Counts of one matching run, by rule (rows written), the ambiguities found, and the
    pairs matched by reference whose items disagree (suspects, by notification and posting id).
    """

    rows_by_rule: Counter[str] = field(default_factory=Counter)
    attached: int = 0
    ambiguities: list[Ambiguity] = field(default_factory=list)
    status_suspects: set[int] = field(default_factory=set)
    money_suspects: set[int] = field(default_factory=set)
    attached_notifications: set[int] = field(default_factory=set)

    @property
    def rows(self) -> int:
        return sum(self.rows_by_rule.values())

    def add(self, other: MatchTally) -> None:
        self.rows_by_rule.update(other.rows_by_rule)
        self.attached += other.attached
        self.ambiguities.extend(other.ambiguities)
        self.status_suspects |= other.status_suspects
        self.money_suspects |= other.money_suspects
        self.attached_notifications |= other.attached_notifications
