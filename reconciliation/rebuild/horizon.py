"""How far the live store's last pass judged the facts: what a rebuild copies and compares.

A running store takes in facts every second, and a pass judges only those there when it ran.
A rebuild that judged every fact in the store would find "differences" that are only facts no
pass has looked at yet (a posting polled a second after the pass sits in no backlog live, and in
the rebuilt one). So the rebuild reads the live pass's own high-water marks, in the same
snapshot as the facts, and goes exactly as far:

- matching: per stream, the ids the pass's frontier reached (`match.seen.*`); the scratch pass
  reads no further (its `ceiling`);
- postings: up to the highest id the pass's balance read summed (at least the frontier's), so
  the rebuilt balance sums are made of the same postings;
- deliveries: up to the highest id the pass's drift rules checked;
- notifications and transfers above the frontier: only those a pass already took as a
  counterpart (named by a match); the other notifications are dropped from the scratch once
  read again, the other transfers (and their status history) are not copied;
- balance snapshots: only those the live store holds a check of (a pass judged them);
- transfer status changes observed after the pass: copied, but the transfer is judged as its
  history says it stood when the pass ran (`facts.as_the_pass_saw_them`).

What lies beyond is counted (`unjudged`) and shown as "not yet judged by a pass", never as a
difference. Notifications the rebuild finds and the live store lacks altogether (ids above
every live one) stay in both the scratch and the comparison: that is a difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection, Table, and_, exists, false, func, not_, or_, select

from reconciliation.drift.balance import POSTINGS_READ
from reconciliation.matching.frontier import STREAMS, watermark_name
from reconciliation.reconcile import DELIVERIES_CHECKED, LAST_PASS_AT
from reconciliation.store import watermarks
from reconciliation.store.models import Base

#: The stores's tables as the live connection names them.
LIVE: Final = Base.metadata.tables


@dataclass(frozen=True, slots=True)
class Horizon:
    """The live pass's marks, and what lies beyond them.

    seen: per matching stream, the highest id the last pass's frontier reached.
    postings: the highest posting id copied (the balance read's, at least the frontier's).
    deliveries: the highest delivery id the last pass's drift rules checked.
    notifications_top: the highest live notification id (a rebuilt one above it is new).
    unjudged: facts beyond the marks, by kind (shown, never compared).
    passed_at: when that pass ran (None: no pass has run).
    """

    seen: dict[str, int]
    postings: int
    deliveries: int
    notifications_top: int
    unjudged: dict[str, int] = field(default_factory=dict)
    passed_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "seen": self.seen,
            "postings": self.postings,
            "deliveries": self.deliveries,
            "notYetJudged": self.unjudged,
        }


def _marks(connection: Connection, names: list[str]) -> dict[str, int]:
    marks = LIVE["watermarks"]
    rows = connection.execute(select(marks.c.name, marks.c.value).where(marks.c.name.in_(names)))
    found = {str(name): int(value) for name, value in rows}
    return {name: found.get(name, 0) for name in names}


def _top(connection: Connection, table: Table) -> int:
    return int(connection.scalar(select(func.coalesce(func.max(table.c.id), 0))) or 0)


def _count(connection: Connection, table: Table, *where: Any) -> int:
    return int(connection.scalar(select(func.count()).select_from(table).where(*where)) or 0)


def judged_notification(tables: dict[str, Table], horizon: Horizon) -> Any:
    """SQL over `tables`: a notification the last pass judged, or one no live row has."""
    n, m = tables["notifications"], tables["matches"]
    return or_(
        n.c.id <= horizon.seen["notification"],
        n.c.id > horizon.notifications_top,
        exists().where(m.c.notification_id == n.c.id),
    )


def judged_transfer(tables: dict[str, Table], horizon: Horizon) -> Any:
    """SQL over `tables`: a transfer the last pass's matching read, or took as a counterpart."""
    t, m = tables["transfers"], tables["matches"]
    return or_(t.c.id <= horizon.seen["transfer"], exists().where(m.c.transfer_id == t.c.id))


def changed_after_the_pass(transfers: Table, changes: Table, passed_at: datetime) -> Any:
    """SQL over `transfers`: the transfer's status history has a change observed after the
    pass that ran at `passed_at`."""
    return exists().where(
        changes.c.transfer_id == transfers.c.id, changes.c.observed_at > passed_at
    )


def checked_snapshot(tables: dict[str, Table]) -> Any:
    """SQL over `tables`: a balance snapshot some pass wrote a check of."""
    s, c = tables["balance_snapshots"], tables["balance_checks"]
    return exists().where(c.c.snapshot_id == s.c.id)


def read_horizon(connection: Connection) -> Horizon:
    """The live pass's marks and the facts beyond them (in the caller's transaction)."""
    names = [watermark_name(s) for s in STREAMS]
    marks = _marks(connection, [*names, POSTINGS_READ, DELIVERIES_CHECKED, LAST_PASS_AT])
    seen = {s: marks[watermark_name(s)] for s in STREAMS}
    horizon = Horizon(
        seen=seen,
        postings=max(seen["posting"], marks[POSTINGS_READ]),
        deliveries=marks[DELIVERIES_CHECKED],
        notifications_top=_top(connection, LIVE["notifications"]),
        passed_at=watermarks.from_millis(marks[LAST_PASS_AT]) if marks[LAST_PASS_AT] else None,
    )
    p, d, t = LIVE["postings"], LIVE["deliveries"], LIVE["transfers"]
    n, s, c = LIVE["notifications"], LIVE["balance_snapshots"], LIVE["balance_checks"]
    changes = LIVE["transfer_changes"]
    changed = (
        [judged_transfer(LIVE, horizon), changed_after_the_pass(t, changes, horizon.passed_at)]
        if horizon.passed_at is not None
        else [false()]
    )
    newest_checked = (
        select(func.max(c.c.snapshot_id)).where(c.c.holding_id == s.c.holding_id).scalar_subquery()
    )
    horizon.unjudged.update(
        {
            "postings": _count(connection, p, p.c.id > seen["posting"]),
            "deliveries": _count(connection, d, d.c.id > horizon.deliveries),
            "notifications": _count(connection, n, not_(judged_notification(LIVE, horizon))),
            "transfers": _count(connection, t, not_(judged_transfer(LIVE, horizon))),
            "changed transfers": _count(connection, t, *changed),
            "balance snapshots": _count(
                connection,
                s,
                not_(checked_snapshot(LIVE)),
                or_(newest_checked.is_(None), s.c.id > newest_checked),
            ),
        }
    )
    return horizon


def drop_unjudged_notifications(
    connection: Connection, scratch: dict[str, Table], horizon: Horizon
) -> int:
    """Remove from the scratch the notifications read again that no pass has judged yet
    (above the frontier, named by no live match, not new to the live store)."""
    n, m = scratch["notifications"], LIVE["matches"]
    gone = connection.execute(
        n.delete().where(
            and_(
                n.c.id > horizon.seen["notification"],
                n.c.id <= horizon.notifications_top,
                not_(exists().where(m.c.notification_id == n.c.id)),
            )
        )
    ).rowcount
    return int(gone or 0)
