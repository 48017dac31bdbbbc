"""The shape every section of the report has: a titled table of typed columns and cells.

`reconciliation.reports.sections` fills it, once per report; text, HTML and CSV draw it. A
column's kind says how each format draws its cells (text and HTML for people, CSV for
machines: see `reconciliation.reports.sections`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from reconciliation.postings.holding_identity import HoldingIdentity

#: Column kinds: how a renderer draws the cells of a column (see the module docstring).
TEXT: Final = "text"
COUNT: Final = "count"
MONEY: Final = "money"
COUNTED: Final = "counted"
AMOUNTS: Final = "amounts"
MOMENT: Final = "moment"
HOLDING: Final = "holding"
NAME: Final = "name"


@dataclass(frozen=True, slots=True)
class Money:
    """An amount in minor units of one unit; `signed` shows '+' before a positive one."""

    minor: int
    currency: str
    signed: bool = False


@dataclass(frozen=True, slots=True)
class Counted:
    """How many, and how much they add up to: '2 / 1,500.00 NGN'."""

    count: int
    amount: Money


#: What a cell may hold; its column's kind says which.
Cell = str | int | datetime | Money | Counted | HoldingIdentity | tuple[Money, ...] | None


@dataclass(frozen=True, slots=True)
class Column:
    """`key` names it in CSV (snake_case), `title` for people; `numeric` aligns right,
    `prose` may wrap (long words from the store); `people=False` keeps it out of text and
    HTML, `machines=False` out of CSV."""

    key: str
    title: str
    kind: str = TEXT
    numeric: bool = False
    prose: bool = False
    people: bool = True
    machines: bool = True


@dataclass(frozen=True, slots=True)
class Section:
    """One titled table of the report; `empty` is the sentence it reads as without rows."""

    key: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    empty: str
    #: Drawn as a table in text and HTML (False: CSV only; people read it as sentences).
    people: bool = True

    def for_people(self) -> tuple[tuple[Column, ...], list[tuple[Cell, ...]]]:
        """The columns people see and each row's cells for them."""
        return self._keep([i for i, c in enumerate(self.columns) if c.people])

    def for_machines(self) -> tuple[tuple[Column, ...], list[tuple[Cell, ...]]]:
        """The columns CSV writes and each row's cells for it."""
        return self._keep([i for i, c in enumerate(self.columns) if c.machines])

    def _keep(self, keep: list[int]) -> tuple[tuple[Column, ...], list[tuple[Cell, ...]]]:
        return tuple(self.columns[i] for i in keep), [tuple(r[i] for i in keep) for r in self.rows]


def holding_column(key: str = "holding", title: str = "holding") -> Column:
    return Column(key, title, HOLDING)


def count_column(key: str, title: str | None = None) -> Column:
    return Column(key, title or key.replace("_", " "), COUNT, numeric=True)


def money_column(key: str, title: str, *, people: bool = True) -> Column:
    return Column(key, title, MONEY, numeric=True, people=people)
