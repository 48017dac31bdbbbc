"""The shape every section of the report has: a titled table of typed columns and cells.

`reconciliation.reports.sections` fills it, once per report; JSON, CSV, text and HTML draw it.
A column's kind says how each format draws its cells (text and HTML for people, CSV and JSON
for machines: see `reconciliation.reports.sections`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.model import DriftPoint

#: Column kinds: how a renderer draws the cells of a column (see the module docstring).
TEXT: Final = "text"
COUNT: Final = "count"
MONEY: Final = "money"
COUNTED: Final = "counted"
AMOUNTS: Final = "amounts"
MOMENT: Final = "moment"
HOLDING: Final = "holding"
NAME: Final = "name"
#: A value unit's code; JSON writes the unit's exponent beside it.
UNIT: Final = "unit"
#: A holding's balance checks over time (JSON only; HTML draws them as a chart from the report).
POINTS: Final = "points"


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


class AccountNumber(str):
    """A bank account number in a cell of text: CSV keeps its digits text for a spreadsheet
    (`reconciliation.reports.csv_format`); a holding's own account number is one already."""

    __slots__ = ()


#: What a cell may hold; its column's kind says which.
Cell = (
    str
    | int
    | datetime
    | Money
    | Counted
    | HoldingIdentity
    | tuple[Money, ...]
    | tuple[DriftPoint, ...]
    | None
)


@dataclass(frozen=True, slots=True)
class Column:
    """`key` names it in CSV (snake_case), `title` for people; `numeric` aligns right,
    `prose` may wrap (long words from the store); `people=False` keeps it out of text and
    HTML, `machines=False` out of CSV; `json` is its key in the JSON report (a dotted key nests,
    None leaves it out)."""

    key: str
    title: str
    kind: str = TEXT
    numeric: bool = False
    prose: bool = False
    people: bool = True
    machines: bool = True
    json: str | None = None


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

    def for_json(self) -> tuple[tuple[Column, ...], list[tuple[Cell, ...]]]:
        """The columns JSON writes (those with a JSON key) and each row's cells for it."""
        return self._keep([i for i, c in enumerate(self.columns) if c.json])

    def _keep(self, keep: list[int]) -> tuple[tuple[Column, ...], list[tuple[Cell, ...]]]:
        return tuple(self.columns[i] for i in keep), [tuple(r[i] for i in keep) for r in self.rows]


def holding_column(key: str = "holding", title: str = "holding", *, json: bool = True) -> Column:
    """A holding: JSON spreads it as holdingRef, accountNumber and accountName."""
    return Column(key, title, HOLDING, json=key if json else None)


def unit_column(key: str = "currency", title: str = "unit", **shown: bool) -> Column:
    """A value unit: JSON writes it as `currency` with the unit's `exponent` beside it."""
    return Column(key, title, UNIT, json="currency", **shown)


def count_column(key: str, title: str | None = None, json: str | None = None) -> Column:
    return Column(key, title or key.replace("_", " "), COUNT, numeric=True, json=json)


def money_column(key: str, title: str, json: str, *, people: bool = True) -> Column:
    return Column(key, title, MONEY, numeric=True, people=people, json=json)


def json_only(key: str, kind: str = TEXT) -> Column:
    """A column only JSON writes (what text, HTML and CSV say another way, or not at all)."""
    return Column(key, key, kind, people=False, machines=False, json=key)
