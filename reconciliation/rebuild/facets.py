"""The derived state as comparable rows: one `Facet` per derived table, its columns that matter.

A facet is a SELECT of text columns, rendered so that one state gives the same text on SQLite
and PostgreSQL (uuids as 32 hex digits, times as `YYYY-MM-DD HH:MM:SS.ffffff` UTC, booleans as
0/1, NULL as `\\N`). The digest hashes these rows and the comparison subtracts them, so what
"equal" means is written once, here.

Columns that record *when* something was derived (`matched_at`, `opened_at`, occurrences, an
alert's evidence text) are left out: a rebuild derives the same facts at another time. History
that a rebuild cannot reproduce is left out too: resolved alerts, balance checks of snapshots
other than a holding's latest checked one.

Given a `Horizon` (the live pass's marks, `reconciliation.rebuild.horizon`), the deliveries and
notifications beyond it are left out on both sides: no pass has judged them yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, reduce
from typing import Any, Final, TypeAlias

from sqlalchemy import (
    Boolean,
    ColumnElement,
    MetaData,
    Select,
    Table,
    Text,
    Uuid,
    case,
    cast,
    func,
    literal,
    select,
    union_all,
)
from sqlalchemy.engine import Dialect

from reconciliation.rebuild.horizon import Horizon, judged_notification
from reconciliation.store.models import EXCEPTION, Base
from reconciliation.store.types import UTCDateTime

#: A SELECT of any columns (a facet's rows).
Rows: TypeAlias = "Select[*tuple[Any, ...]]"

#: What a NULL renders as (a value no column holds).
NULL_TEXT: Final = "\\N"
#: Between two columns of one row (the ASCII unit separator: in no uuid, number or state name).
SEPARATOR: Final = "\x1f"
#: Alert states that count as "open" for a comparison.
ACTIVE_ALERT_STATES: Final = ("open", "acknowledged")


def tables_in(schema: str | None) -> dict[str, Table]:
    """The store's tables in `schema` (None: the connection's own, i.e. the live store)."""
    if schema is None:
        return dict(Base.metadata.tables)
    return dict(_copied_tables(schema))


@cache
def _copied_tables(schema: str) -> dict[str, Table]:
    """The store's tables described again in `schema`, once per schema: a description is fixed,
    and making one costs about 60 ms (every table, column, index and constraint copied), which
    a rebuild paid some fifteen times over; the same Table objects also let SQLAlchemy reuse
    each statement's compiled form."""
    metadata = MetaData()
    return {
        name: table.to_metadata(metadata, schema=schema)
        for name, table in Base.metadata.tables.items()
    }


def render(column: ColumnElement[Any], dialect: Dialect) -> ColumnElement[str]:
    """One column as text, the same on both databases (see the module docstring)."""
    kind = column.type
    text: ColumnElement[Any]
    if dialect.name == "postgresql":
        if isinstance(kind, Uuid):
            text = func.replace(cast(column, Text), "-", "")
        elif isinstance(kind, UTCDateTime):
            text = func.to_char(func.timezone("UTC", column), "YYYY-MM-DD HH24:MI:SS.US")
        elif isinstance(kind, Boolean):
            text = case((column.is_(True), "1"), (column.is_(False), "0"))
        else:
            text = cast(column, Text)
    else:
        # SQLite keeps uuids as 32 hex digits, times as the text above, booleans as 0/1.
        text = cast(column, Text)
    return func.coalesce(text, NULL_TEXT)


def joined(columns: Sequence[ColumnElement[str]]) -> ColumnElement[str]:
    """A rendered row as one text value (what the digest hashes)."""
    return reduce(lambda a, b: a.concat(SEPARATOR).concat(b), columns)


@dataclass(frozen=True, slots=True)
class Facet:
    """One derived table as rows of text: `rows(tables, dialect, horizon)` builds its SELECT."""

    name: str
    columns: tuple[str, ...]
    rows: Callable[[dict[str, Table], Dialect, Horizon | None], Rows]


#: A condition on a facet's rows: (its tables, the horizon or None) -> SQL, or None for all.
Within: TypeAlias = Callable[[dict[str, Table], Horizon | None], Any]


def _plain(name: str, table: str, columns: tuple[str, ...], where: Within | None = None) -> Facet:
    """A facet of one table's columns as they are, of the rows `where` says (all without)."""

    def build(t: dict[str, Table], dialect: Dialect, horizon: Horizon | None) -> Rows:
        query = select(*(render(t[table].c[c], dialect).label(c) for c in columns))
        condition = where(t, horizon) if where is not None else None
        return query if condition is None else query.where(condition)

    return Facet(name, columns, build)


_NOTIFICATION_COLUMNS: Final = (
    "id",
    "delivery_pk",
    "event_id",
    "event_type",
    "transfer_ref",
    "receipt_ref",
    "account_ref",
    "endpoint_ref",
    "holding_ref",
    "account_number",
    "amount_minor",
    "currency",
    "claimed_status",
    "occurred_at",
    "body_id",
    "payload_shape",
)


def _matches(t: dict[str, Table], dialect: Dialect, _horizon: Horizon | None) -> Rows:
    m = t["matches"]
    active = case((m.c.unmatched_at.is_(None), "1"), else_="0")
    columns = ("rule", "posting_id", "transfer_id", "notification_id")
    return select(*(render(m.c[c], dialect).label(c) for c in columns), active.label("active"))


def _exceptions(t: dict[str, Table], dialect: Dialect, _horizon: Horizon | None) -> Rows:
    parts = [
        select(literal(kind).label("kind"), render(t[table].c.id, dialect).label("item_id")).where(
            t[table].c.match_status == EXCEPTION
        )
        for kind, table in (
            ("posting", "postings"),
            ("transfer", "transfers"),
            ("notification", "notifications"),
        )
    ]
    every = union_all(*parts).subquery("exceptions")
    return select(every.c.kind, every.c.item_id)


def _balance_checks(t: dict[str, Table], dialect: Dialect, _horizon: Horizon | None) -> Rows:
    """Each holding's check of its newest checked snapshot: a snapshot no pass has checked yet
    (its holding's poller behind it, or it came after the pass) is not yet judged. Newest as
    the balance rule orders snapshots (by `observed_at`, then id), not by id alone: two
    snapshot reads of one holding may store their rows in the other order."""
    checks, holdings = t["balance_checks"], t["holdings"]
    # One probe of the (holding_id, observed_at) index per holding, whatever the history.
    newest = (
        select(checks.c.id)
        .where(checks.c.holding_id == holdings.c.id)
        .order_by(checks.c.observed_at.desc(), checks.c.snapshot_id.desc())
        .limit(1)
        .scalar_subquery()
    )
    columns = ("snapshot_id", "holding_id", "settled_minor", "posted_minor", "drift_minor")
    return select(
        *(render(checks.c[c], dialect).label(c) for c in columns),
        render(checks.c.explained_by_lag, dialect).label("explained_by_lag"),
    ).where(checks.c.id.in_(select(newest).select_from(holdings)))


#: Every derived table, in the order reports print them.
FACETS: Final[tuple[Facet, ...]] = (
    _plain(
        "notifications",
        "notifications",
        _NOTIFICATION_COLUMNS,
        lambda t, horizon: None if horizon is None else judged_notification(t, horizon),
    ),
    _plain(
        "deliveries",
        "deliveries",
        ("id", "state", "event_type", "shape_problem"),
        lambda t, horizon: None if horizon is None else t["deliveries"].c.id <= horizon.deliveries,
    ),
    Facet("matches", ("rule", "posting_id", "transfer_id", "notification_id", "active"), _matches),
    Facet("exceptions", ("kind", "item_id"), _exceptions),
    _plain("backlog", "match_backlog", ("kind", "item_id")),
    _plain(
        "open_alerts",
        "alerts",
        ("kind", "severity", "fingerprint"),
        lambda t, _horizon: t["alerts"].c.state.in_(ACTIVE_ALERT_STATES),
    ),
    Facet(
        "balance_checks",
        ("snapshot_id", "holding_id", "settled_minor", "posted_minor", "drift_minor", "lag"),
        _balance_checks,
    ),
)

#: Facets by name.
BY_NAME: Final = {f.name: f for f in FACETS}


def facet_rows(
    facet: Facet, schema: str | None, dialect: Dialect, horizon: Horizon | None = None
) -> Rows:
    """The facet's SELECT over the tables of `schema` (None: the live store), within `horizon`
    when given."""
    return facet.rows(tables_in(schema), dialect, horizon)
