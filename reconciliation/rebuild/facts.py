"""Copy the raw facts into the scratch: what recon was told, did, or a person decided.

Every copy is one INSERT .. SELECT between the live tables and the scratch ones (the database
moves the rows; nothing passes through Python), inside the caller's transaction, so all of them
read one consistent state of the live store.

Facts: holdings and locators, activity cursors (copied so the pass sees the pollers' health),
postings, balance snapshots, transfers with their status history, intents and outbound requests,
the inbox (intake decisions and each body's hash, not its bytes: `LEFT_EMPTY`; what processing
derived is recomputed by `reconciliation.rebuild.notifications`), subscriptions and their secrets, notifications that no
delivery produced (written by other means, so nothing could derive them again), and people's
decisions: manual matches, unmatches, and alerts a person acknowledged or resolved, plus alerts
of kinds no pass or processing raises (the subscription check's, the audit's), and what
retention removed (its `retention.*` watermarks: a rebuild sums a pruned holding's postings
from the net amount removed, not from nothing). Items are copied
`unmatched`; an item a person took apart becomes an exception again, as `recon unmatch` left it.

Postings, deliveries, transfers and balance snapshots are copied up to the live pass's marks
(`reconciliation.rebuild.horizon`): the rebuild judges what that pass judged, no more. A
transfer whose status changed after that pass is put back as the pass saw it, from its status
history (`as_the_pass_saw_them`); its later changes are copied, and counted as not yet judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Table,
    and_,
    case,
    exists,
    false,
    func,
    literal,
    or_,
    select,
    update,
)

from reconciliation.alerts.lifecycle import AUTO_RESOLVER
from reconciliation.drift import ALERT_KINDS
from reconciliation.matching.vocabulary import PEOPLES_RULES
from reconciliation.notifications.shape_alerts import KIND as SHAPE_ALERT
from reconciliation.rebuild.facets import tables_in
from reconciliation.rebuild.horizon import (
    Horizon,
    changed_after_the_pass,
    checked_snapshot,
    judged_transfer,
)
from reconciliation.store.models import EXCEPTION, UNMATCHED

#: Alert kinds a rebuild derives again (the pass's and processing's); others are facts.
DERIVED_ALERT_KINDS: Final = frozenset(ALERT_KINDS) | {SHAPE_ALERT}

#: Tables copied whole, in foreign-key order.
WHOLE: Final = (
    "holdings",
    "locators",
    "activity_cursors",
    "postings",
    "balance_snapshots",
    "transfers",
    "transfer_changes",
    "transfer_fee_receipts",
    "transfer_intents",
    "outbound_requests",
    "deliveries",
    "subscriptions",
    "webhook_secrets",
)
#: Watermarks that are facts: what retention removed (per holding, the pruned horizon the audit
#: reads and the net amount the balance check starts from) and how far its scans have got.
#: Every other watermark is a pass's progress, derived again.
RETENTION_MARKS: Final = "retention."
#: Tables whose `match_status` is derived: copied as `unmatched`.
ITEMS: Final = ("postings", "transfers", "notifications")
#: Derived tables that get rows of their own (a sequence to move past copied ids).
NUMBERED: Final = ("notifications", "matches", "alerts", "balance_checks")


@dataclass(slots=True)
class CopiedFacts:
    """How many rows of each table were copied."""

    rows: dict[str, int] = field(default_factory=dict)


#: Columns copied empty: a delivery's bytes (most of the inbox's size) are read again from the
#: live store by `reconciliation.rebuild.notifications`; nothing in the scratch reads them (the
#: pass tells bodies apart by `body_sha256`, a swap writes back only derived columns), so
#: copying them would move the inbox's gigabytes for nothing.
LEFT_EMPTY: Final = {("deliveries", "body"): b""}


def _copy(
    connection: Connection, source: Table, target: Table, *where: Any, status: bool = False
) -> int:
    names = [c.name for c in source.columns]
    columns = [
        literal(UNMATCHED).label(c.name)
        if status and c.name == "match_status"
        else literal(LEFT_EMPTY[source.name, c.name], c.type).label(c.name)
        if (source.name, c.name) in LEFT_EMPTY
        else c
        for c in source.columns
    ]
    before = connection.scalar(select(func.count()).select_from(target)) or 0
    connection.execute(target.insert().from_select(names, select(*columns).where(*where)))
    # Counted, not taken from rowcount: psycopg may report -1 for an INSERT .. SELECT.
    return int(connection.scalar(select(func.count()).select_from(target)) or 0) - int(before)


def _within(live: dict[str, Table], name: str, horizon: Horizon) -> list[Any]:
    """Which rows of a fact table the live pass judged (all, for most tables)."""
    table = live[name]
    if name == "postings":
        return [table.c.id <= horizon.postings]
    if name == "deliveries":
        return [table.c.id <= horizon.deliveries]
    if name == "balance_snapshots":
        return [checked_snapshot(live)]
    if name == "transfers":
        return [judged_transfer(live, horizon)]
    if name in ("transfer_changes", "transfer_fee_receipts"):
        judged = select(live["transfers"].c.id).where(judged_transfer(live, horizon))
        return [table.c.transfer_id.in_(judged)]
    return []


def copy_facts(connection: Connection, schema: str, horizon: Horizon) -> CopiedFacts:
    """Copy every fact the live pass judged into the (empty) scratch `schema`, in the caller's
    transaction."""
    live, scratch = tables_in(None), tables_in(schema)
    copied = CopiedFacts()
    for name in WHOLE:
        copied.rows[name] = _copy(
            connection,
            live[name],
            scratch[name],
            *_within(live, name, horizon),
            status=name in ITEMS,
        )
    copied.rows["transfers (as the pass saw them)"] = as_the_pass_saw_them(
        connection, scratch, horizon
    )
    notes = live["notifications"]
    copied.rows["notifications (no delivery)"] = _copy(
        connection, notes, scratch["notifications"], notes.c.delivery_pk.is_(None), status=True
    )
    marks = live["watermarks"]
    copied.rows["watermarks (retention's)"] = _copy(
        connection, marks, scratch["watermarks"], marks.c.name.startswith(RETENTION_MARKS)
    )
    matches = live["matches"]
    copied.rows["matches (people's)"] = _copy(
        connection,
        matches,
        scratch["matches"],
        or_(matches.c.rule.in_(PEOPLES_RULES), matches.c.unmatched_at.is_not(None)),
    )
    alerts = live["alerts"]
    copied.rows["alerts (facts)"] = _copy(
        connection,
        alerts,
        scratch["alerts"],
        or_(
            alerts.c.kind.not_in(sorted(DERIVED_ALERT_KINDS)),
            alerts.c.acknowledged_by.is_not(None),
            and_(alerts.c.resolved_by.is_not(None), alerts.c.resolved_by != AUTO_RESOLVER),
        ),
    )
    if connection.dialect.name == "postgresql":
        for name in NUMBERED:
            connection.exec_driver_sql(
                f"SELECT setval(pg_get_serial_sequence('{schema}.{name}', 'id'), "
                f"GREATEST((SELECT max(id) FROM {name}), "
                f"(SELECT max(id) FROM {schema}.{name}), 1))"
            )
    return copied


def as_the_pass_saw_them(
    connection: Connection, scratch: dict[str, Table], horizon: Horizon
) -> int:
    """Put each copied transfer whose status changed after the live pass back as that pass saw
    it: stage, status, reason, revision and outcome from its last change observed by then
    (`is_terminal` NULL: a change recorded before outcomes were kept, not terminal). Only the
    status history says what the transfer was; what it is now is for the next pass to judge.
    Returns how many transfers were put back."""
    if horizon.passed_at is None:
        return 0
    t, c = scratch["transfers"], scratch["transfer_changes"]
    history = c.alias("history")
    then = (
        select(history.c.id)
        .where(history.c.transfer_id == t.c.id, history.c.observed_at <= horizon.passed_at)
        .order_by(history.c.observed_at.desc(), history.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )

    def as_then(column: Any) -> Any:
        return select(column).where(c.c.id == then).scalar_subquery()

    terminal = func.coalesce(as_then(c.c.is_terminal), false())
    moved = connection.execute(
        update(t)
        .where(changed_after_the_pass(t, c, horizon.passed_at), then.is_not(None))
        .values(
            stage=as_then(c.c.stage),
            status=as_then(c.c.status),
            reason=as_then(c.c.reason),
            revision=as_then(c.c.revision),
            is_terminal=terminal,
            is_successful=as_then(c.c.is_successful),
            terminal_at=case((terminal, t.c.terminal_at), else_=None),
        )
    )
    return int(moved.rowcount or 0)


def restore_unmatched_exceptions(connection: Connection, schema: str) -> None:
    """Items a person took apart and left apart are exceptions again, as `recon unmatch` left them.

    Whether an item was left in no active row when the person unmatched depends on the other
    rows active then, which a rebuild only derives later; the outcome of the decision is what
    the live store recorded on the item, so it is carried for exactly the items a person's
    unmatch names. Exceptions from ambiguity are derived again by the pass. Run once the
    notifications are rebuilt (a person's decision may name one).
    """
    live, scratch = tables_in(None), tables_in(schema)
    matches = live["matches"]
    for table_name, column in (
        ("postings", "posting_id"),
        ("transfers", "transfer_id"),
        ("notifications", "notification_id"),
    ):
        items = live[table_name]
        decided = select(items.c.id).where(
            items.c.match_status == EXCEPTION,
            exists().where(matches.c[column] == items.c.id, matches.c.unmatched_at.is_not(None)),
        )
        target = scratch[table_name]
        connection.execute(
            update(target).where(target.c.id.in_(decided)).values(match_status=EXCEPTION)
        )
