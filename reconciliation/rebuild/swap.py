"""Replace the live derived state with the rebuilt one, in one transaction.

Only what differs is written: a swap after a clean rebuild writes nothing, and a swap that
fixes ten rows writes about ten. History the rebuild cannot reproduce is kept: matches a person
made or took apart, resolved alerts, balance checks of older snapshots. Alerts move through
their life cycle rather than being replaced: an alert the rebuild finds and the live store does
not have open is opened (or reopened, keeping its history), one the live store has open and the
rebuild does not is resolved by `recon rebuild`; the alert outbox then publishes both.

The swap refuses when the live facts moved since the rebuild read them (`FactsMark`): new
postings, deliveries or transfers would otherwise be judged by a state derived without them.
It holds the pass lease meanwhile, so no pass writes between the check and the commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Table,
    and_,
    delete,
    exists,
    func,
    literal_column,
    not_,
    or_,
    select,
    update,
)

from reconciliation.alerts.lifecycle import OPEN, RESOLVED
from reconciliation.matching.vocabulary import PEOPLES_RULES
from reconciliation.rebuild.facets import ACTIVE_ALERT_STATES, tables_in
from reconciliation.rebuild.facts import DERIVED_ALERT_KINDS
from reconciliation.rebuild.horizon import Horizon, judged_notification

#: Who resolved an alert the rebuilt state no longer has.
REBUILD_RESOLVER: Final = "recon rebuild"
#: Notification columns a swap compares (all but when it was written and its match status).
_NOTE_SKIP: Final = ("created_at", "match_status")
#: Derived columns of a delivery.
_DELIVERY_DERIVED: Final = ("state", "event_type", "shape_problem", "error")


class StaleRebuildError(Exception):
    """The live facts changed after the rebuild read them; run the rebuild again."""


@dataclass(frozen=True, slots=True)
class FactsMark:
    """How many facts the live store held, and its highest ids: equal marks, same facts."""

    values: tuple[int, ...]


def facts_mark(connection: Connection) -> FactsMark:
    """Counts and tops of the tables a rebuild derives from (read in the caller's transaction)."""
    t = tables_in(None)
    values: list[int] = []
    for name in ("postings", "transfers", "transfer_changes", "balance_snapshots", "deliveries"):
        table = t[name]
        count, top = connection.execute(
            select(func.count(), func.coalesce(func.max(table.c.id), 0))
        ).one()
        values += [int(count), int(top)]
    d, m = t["deliveries"], t["matches"]
    # Processing (or a replay and processing again) moves the attempts.
    tried, attempts = connection.execute(
        select(func.count(), func.coalesce(func.sum(d.c.attempts), 0)).where(d.c.attempts > 0)
    ).one()
    values += [int(tried), int(attempts)]
    people = or_(m.c.rule.in_(PEOPLES_RULES), m.c.unmatched_at.is_not(None))
    values.append(int(connection.scalar(select(func.count()).where(people)) or 0))
    return FactsMark(tuple(values))


def live_schema(connection: Connection) -> str:
    """The live tables' schema: `main` on SQLite, the search path's first on PostgreSQL."""
    if connection.dialect.name == "sqlite":
        return "main"
    return str(connection.exec_driver_sql("SELECT current_schema()").scalar_one())


def _same(live: Table, scratch: Table, columns: list[str]) -> Any:
    return and_(*(scratch.c[c].is_not_distinct_from(live.c[c]) for c in columns))


def _copy_rows(
    connection: Connection, source: Table, target: Table, *where: Any, ids: bool = False
) -> int:
    """Insert `source`'s rows (those `where` says) into `target`, with their ids or under new
    ones; how many (counted from RETURNING: psycopg may report -1 for an INSERT .. SELECT)."""
    names = [c.name for c in source.columns if ids or c.name != "id"]
    statement = target.insert().from_select(
        names, select(*(source.c[n] for n in names)).where(*where)
    )
    return sum(1 for _ in connection.execute(statement.returning(literal_column("1"))))


def swap(
    connection: Connection,
    schema: str,
    mark: FactsMark,
    now: datetime,
    horizon: Horizon | None = None,
) -> dict[str, int]:
    """Make the live derived state the rebuilt one (caller's transaction); rows written by table.

    Within `horizon` (the live pass's marks the rebuild went to): notifications beyond it are
    not the rebuild's to remove."""
    if facts_mark(connection) != mark:
        raise StaleRebuildError(
            "the live store received new facts after the rebuild read them (postings, "
            "deliveries, transfers or a person's match); run `recon rebuild --swap` again"
        )
    # The live tables by their schema's own name: a DELETE correlated with a same-named table
    # in the scratch schema must not see two tables called `notifications`.
    live, scratch = tables_in(live_schema(connection)), tables_in(schema)
    written: dict[str, int] = {}
    written["notifications"] = _swap_notifications(connection, live, scratch, horizon)
    for name in ("postings", "transfers", "notifications"):
        written[f"{name}.match_status"] = _restate(
            connection, live[name], scratch[name], ["match_status"]
        )
    written["deliveries"] = _restate(
        connection, live["deliveries"], scratch["deliveries"], list(_DELIVERY_DERIVED)
    )
    written["matches"] = _swap_matches(connection, live["matches"], scratch["matches"])
    connection.execute(delete(live["match_backlog"]))
    written["match_backlog"] = _copy_rows(
        connection, scratch["match_backlog"], live["match_backlog"], ids=True
    )
    w_live, w_scratch = live["watermarks"], scratch["watermarks"]
    connection.execute(delete(w_live).where(w_live.c.name.in_(select(w_scratch.c.name))))
    written["watermarks"] = _copy_rows(connection, w_scratch, w_live, ids=True)
    c_live, c_scratch = live["balance_checks"], scratch["balance_checks"]
    connection.execute(
        delete(c_live).where(c_live.c.snapshot_id.in_(select(c_scratch.c.snapshot_id)))
    )
    written["balance_checks"] = _copy_rows(connection, c_scratch, c_live)
    written["alerts"] = _swap_alerts(connection, live["alerts"], scratch["alerts"], now)
    return written


def _swap_notifications(
    connection: Connection,
    live: dict[str, Table],
    scratch: dict[str, Table],
    horizon: Horizon | None,
) -> int:
    n_live, n_scratch = live["notifications"], scratch["notifications"]
    columns = [c.name for c in n_live.columns if c.name not in _NOTE_SKIP]
    kept = exists().where(_same(n_live, n_scratch, columns))
    judged = [] if horizon is None else [judged_notification(live, horizon)]
    gone = connection.execute(
        delete(n_live).where(n_live.c.delivery_pk.is_not(None), not_(kept), *judged)
    ).rowcount
    missing = not_(exists().where(n_live.c.id == n_scratch.c.id))
    return int(gone or 0) + _copy_rows(connection, n_scratch, n_live, missing, ids=True)


def _restate(connection: Connection, live: Table, scratch: Table, columns: list[str]) -> int:
    """Set the live rows' derived columns to the rebuilt values where they differ."""
    differs = exists().where(scratch.c.id == live.c.id, not_(_same(live, scratch, columns)))
    values = {
        c: select(scratch.c[c]).where(scratch.c.id == live.c.id).scalar_subquery() for c in columns
    }
    return int(connection.execute(update(live).where(differs).values(**values)).rowcount or 0)


def _swap_matches(connection: Connection, live: Table, scratch: Table) -> int:
    """Automatic, active rows: drop the ones the rebuild lacks, add the ones the live lacks."""
    key = ["rule", "posting_id", "transfer_id", "notification_id"]

    def automatic(t: Table) -> Any:
        return and_(t.c.rule.not_in(PEOPLES_RULES), t.c.unmatched_at.is_(None))

    in_scratch = exists().where(automatic(scratch), _same(live, scratch, key))
    gone = connection.execute(delete(live).where(automatic(live), not_(in_scratch))).rowcount
    in_live = exists().where(automatic(live), _same(live, scratch, key))
    added = _copy_rows(connection, scratch, live, automatic(scratch), not_(in_live))
    return int(gone or 0) + added


def _swap_alerts(connection: Connection, live: Table, scratch: Table, now: datetime) -> int:
    """Open what the rebuild has open; resolve the derived kinds it does not (few rows)."""
    kinds = sorted(DERIVED_ALERT_KINDS)
    active = ACTIVE_ALERT_STATES
    rebuilt = {
        r.fingerprint: r
        for r in connection.execute(select(scratch).where(scratch.c.state.in_(active)))
    }
    either = or_(
        live.c.fingerprint.in_(list(rebuilt)),
        and_(live.c.kind.in_(kinds), live.c.state.in_(active)),
    )
    current = {r.fingerprint: r for r in connection.execute(select(live).where(either))}
    changed = 0
    for fp, row in rebuilt.items():
        known = current.get(fp)
        if known is not None and known.state in active:
            continue
        fields = {
            "kind": row.kind,
            "severity": row.severity,
            "subject": row.subject,
            "evidence": row.evidence,
            "state": OPEN,
            "opened_at": now,
            "last_seen_at": now,
            "acknowledged_at": None,
            "acknowledged_by": None,
            "resolved_at": None,
            "resolved_by": None,
        }
        if known is None:
            connection.execute(live.insert().values(fingerprint=fp, occurrences=1, **fields))
        else:
            connection.execute(
                update(live)
                .where(live.c.id == known.id)
                .values(occurrences=live.c.occurrences + 1, **fields)
            )
        changed += 1
    for fp, known in current.items():
        if fp in rebuilt or known.state not in active or known.kind not in DERIVED_ALERT_KINDS:
            continue
        connection.execute(
            update(live)
            .where(live.c.id == known.id)
            .values(
                state=RESOLVED,
                resolved_at=now,
                resolved_by=REBUILD_RESOLVER,
                note="not found when the derived state was rebuilt from the facts",
            )
        )
        changed += 1
    return changed
