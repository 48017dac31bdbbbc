"""Balance snapshots are thinned: a change of balance is kept, and one per holding a day.

The snapshot job stores every watched holding's balance every interval, moved or not: with a
thousand holdings a minute apart that is 1.4 million rows a day, nearly all of them repeating
the one before. Older than the configured age (default 2 days, never inside the matching
window) a snapshot is removed when it repeats the previous one of its holding (settled,
available, reserved and projection state alike) on the same UTC day. Its balance check goes
with it (the check is a record of that snapshot).

Never removed: the first snapshot of a holding each day, any change, a snapshot whose check
found drift (the evidence of a mismatch, explained by lag or not), the latest snapshot of each
holding and the one its latest balance check was built on (the next check starts from it), and
one an open alert names.

Snapshots are read in id order from a progress marker (`through` below), so a run reads only
what was stored since the last run became old enough; the first row of each holding is compared
with its predecessor by one probe of the (holding_id, observed_at) index.

Under a limit for postings (RECON_RETAIN_POSTINGS_DAYS), snapshots older than that limit keep
only the first of each holding's UTC day, besides the protected ones above; a drift explained
by the projection's lag is no mismatch and protects nothing there. A busy holding's balance
changes between almost any two snapshots, so keeping every change would grow with traffic for
good, while the postings those checks were built on are gone by then anyway. It is a second
scan with its own progress marker (`CHANGES_THROUGH`), since the first judged these rows
under the other rule long before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.drift.balance_sums import latest_per_holding
from reconciliation.retention.batches import PruneContext, Removed, by_id, take_rows
from reconciliation.store.tables import balance_checks as checks
from reconciliation.store.tables import balance_snapshots as snapshots
from reconciliation.store.tables import holdings

#: Record kind, as reported; its checks are archived as their own table.
KIND: Final = "balance_snapshots"
CHECKS: Final = "balance_checks"

#: Watermark: the highest snapshot id a run has judged.
THROUGH: Final = "retention.balance_snapshots.through_id"
#: Watermark: the highest snapshot id judged under the postings limit (see the docstring).
CHANGES_THROUGH: Final = "retention.balance_snapshots.changes_through_id"


@dataclass(frozen=True, slots=True)
class Seen:
    """The previous snapshot of a holding: what it said, and on which day."""

    balance: tuple[Any, ...]
    day: date


def _balance(row: Any) -> tuple[Any, ...]:
    return (row.settled_minor, row.available_minor, row.reserved_minor, row.projection_state)


def thin_snapshots(ctx: PruneContext, cutoff: datetime, *, keep_changes: bool = True) -> None:
    """Remove repeated snapshots observed before `cutoff`, batch by batch; with
    `keep_changes` False, every snapshot but the first of its holding's day."""
    with ctx.factory() as session:
        protected = _latest_per_holding(session) | ctx.guard.rows.get("snapshot", frozenset())
    previous: dict[int, Seen] = {}

    def judge(session: Session, rows: list[Any], _through: int) -> Removed:
        doomed: list[int] = []
        for row in rows:
            seen = Seen(_balance(row), row.observed_at.date())
            before = previous.get(row.holding_id) or _predecessor(session, row)
            previous[row.holding_id] = seen
            if keep_changes:
                goes = before == seen and not row.drift_minor
            else:
                mismatch = bool(row.drift_minor) and not row.explained_by_lag
                goes = before is not None and before.day == seen.day and not mismatch
            if goes and row.id not in protected:
                doomed.append(row.id)
        if not doomed:
            return {}
        checks_gone = take_rows(session, checks, checks.c.snapshot_id.in_(doomed), ctx.dry_run)
        # The snapshots listed first: archived before their checks.
        return {
            KIND: take_rows(session, snapshots, snapshots.c.id.in_(doomed), ctx.dry_run),
            CHECKS: checks_gone,
        }

    rows = select(snapshots, checks.c.drift_minor, checks.c.explained_by_lag).outerjoin(
        checks, checks.c.snapshot_id == snapshots.c.id
    )
    by_id(
        ctx,
        KIND,
        rows,
        snapshots.c.id,
        lambda _session: lambda row: row.observed_at >= cutoff,
        judge,
        through=THROUGH if keep_changes else CHANGES_THROUGH,
    )


def _predecessor(session: Session, row: Any) -> Seen | None:
    """The snapshot of the same holding just before `row`, by one index probe."""
    s = snapshots
    found = session.execute(
        select(s)
        .where(
            s.c.holding_id == row.holding_id,
            s.c.observed_at <= row.observed_at,
            s.c.id < row.id,
        )
        .order_by(s.c.observed_at.desc(), s.c.id.desc())
        .limit(1)
    ).first()
    return None if found is None else Seen(_balance(found), found.observed_at.date())


def _latest_per_holding(session: Session) -> frozenset[int]:
    """Per holding: its latest snapshot, and the snapshot its latest check was built on."""
    s, c, h = snapshots, checks, holdings
    latest_snapshot = latest_per_holding(s, s.c.id)
    latest_checked = latest_per_holding(c, c.c.snapshot_id)
    found: set[int] = set()
    for a, b in session.execute(select(latest_snapshot, latest_checked).select_from(h)):
        found.update(x for x in (a, b) if x is not None)
    return frozenset(found)
