"""balance_mismatch: a holding's balance snapshot is not the sum of its postings.

For each holding's newest snapshot its activity poller has caught up with (a newer one waits
until the poller has read past it), the posted sum (credits minus debits, by balanceEffect) of
every posting up to the snapshot's time is compared with the snapshot's settled amount
(drift.balance_sums reads both in one consistent read, incrementally). The gateway warns that a
balance lags its postings while the projection catches up, so postings in the last
`projection_grace_seconds` before the snapshot may be missing from it: the snapshot is
consistent when it equals the sum up to any point inside that grace (the sum before the grace,
plus the grace's postings one by one in ledger order). Anything else is drift.

Each comparison is kept in balance_checks (reports draw drift over time from it), and brought
up to date while its snapshot is still the one judged: a posting that arrives late (behind a
snapshot already checked) changes that check, so the check always says what the postings stored
now say. A holding whose poller has not read past any of its snapshots yet is left undecided.
The highest posting id the read saw is kept too (`POSTINGS_READ`): a rebuild copies the
postings up to it, so its sums are made of the postings this pass summed.

Only holdings something touched since the last pass are looked at (new postings or snapshots, a
cursor changed, a drift standing), and of those only the ones whose verdict can have moved are
summed again (drift.balance_changes says which and why); a drift found earlier stands as its
latest check, as stored, and raises the same finding the sum would, pass after pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from foundation import format_money
from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding, fingerprint
from reconciliation.drift.balance_changes import Comparison, Floors, find_changes, keep_unsettled
from reconciliation.drift.balance_sums import Basis, consistent_read, grace_postings, read_bases
from reconciliation.drift.base import DriftContext
from reconciliation.postings.holding_identity import HoldingIdentity, holding_identities
from reconciliation.store import watermarks
from reconciliation.store.database_clock import DatabaseMillis
from reconciliation.store.tables import balance_checks as checks
from reconciliation.store.tables import balance_snapshots as snapshots

KIND: Final = "balance_mismatch"
#: Watermark: the highest posting id the last pass's balance read saw.
POSTINGS_READ: Final = "balance.postings_read"
#: Watermark: the same, one pass earlier: new postings are looked for above it (one read back,
#: so a page committed after a read began but numbered below what it saw is still found).
POSTINGS_READ_BEFORE: Final = "balance.postings_read_before"
#: Watermarks: the highest snapshot id the last pass's read saw, and the same one pass earlier
#: (new snapshots are looked for above it, as postings are). None yet: every holding is judged.
SNAPSHOTS_READ: Final = "balance.snapshots_read"
SNAPSHOTS_READ_BEFORE: Final = "balance.snapshots_read_before"
#: Watermarks: the database's clock (epoch ms) when the last pass's read began, and the same one
#: pass earlier: cursors changed after it (a read released past a snapshot) are looked at.
CURSORS_READ: Final = "balance.cursors_read"
CURSORS_READ_BEFORE: Final = "balance.cursors_read_before"
#: Watermark: the projection grace the standing checks were judged under; another grace (a
#: changed RECON_* setting) judges every holding again.
GRACE_JUDGED: Final = "balance.grace_seconds"
SEVERITY: Final = "critical"


def _finding(seen: Comparison, holding: HoldingIdentity, grace: int) -> Finding:
    drift = seen.settled - seen.posted
    return Finding(
        kind=KIND,
        severity=SEVERITY,
        subject=(
            f"{holding.phrase}: balance {format_money(seen.settled, seen.currency)} but its "
            f"postings sum to {format_money(seen.posted, seen.currency)} "
            f"(drift {format_money(drift, seen.currency, signed=True)})"
        ),
        fingerprint=fingerprint(KIND, seen.holding_ref),
        evidence={
            **holding.as_evidence(),
            "currency": seen.currency,
            "snapshotId": seen.snapshot_id,
            "observedAt": seen.observed_at.isoformat(),
            "settledMinor": str(seen.settled),
            "postedMinor": str(seen.posted),
            "driftMinor": str(drift),
            "projectionGraceSeconds": grace,
        },
    )


def explained_by_lag(settled: int, posted: int, in_grace: list[int]) -> bool:
    """True when `settled` equals the posted sum at some point inside the projection's grace."""
    running = posted - sum(in_grace)
    if running == settled:
        return True
    for amount in in_grace:
        running += amount
        if running == settled:
            return True
    return False


class BalanceMismatch:
    kinds = (KIND,)

    def assess(self, ctx: DriftContext) -> Assessment:
        grace = ctx.policy.projection_grace_seconds
        with consistent_read(ctx.factory) as read:
            cursors_through = read.scalar(select(DatabaseMillis()))
            floors = Floors(
                postings=watermarks.read(read, POSTINGS_READ_BEFORE),
                snapshots=watermarks.read(read, SNAPSHOTS_READ_BEFORE),
                cursors=watermarks.read(read, CURSORS_READ_BEFORE),
            )
            judge_all = (
                watermarks.read(read, GRACE_JUDGED, -1) != grace
                or watermarks.read(read, SNAPSHOTS_READ, -1) < 0
            )
            changes = find_changes(read, floors, judge_all=judge_all)
            bases, through = read_bases(read, changes.to_judge)
            snapshots_through = read.scalar(select(func.coalesce(func.max(snapshots.c.id), 0)))
            # Only a holding whose sum differs needs its last postings, to see if lag explains it.
            differing = [b for b in bases if b.caught_up and b.settled != b.posted]
            in_grace = grace_postings(read, differing, grace)
        undecided = frozenset(fingerprint(KIND, b.holding_ref) for b in bases if not b.caught_up)
        checked: list[tuple[Basis, int, bool]] = []
        drifting = [s.comparison for s in changes.standing if not s.consistent]
        unsettled = {s.holding_id for s in changes.standing if not s.consistent}
        for basis in bases:
            if not basis.caught_up:
                continue
            lagging = in_grace.get(basis.holding_id, [])
            consistent = explained_by_lag(basis.settled, basis.posted, lagging)
            checked.append((basis, basis.posted, consistent))
            if not consistent:
                unsettled.add(basis.holding_id)
                drifting.append(
                    Comparison(
                        basis.holding_ref,
                        basis.currency,
                        basis.snapshot_id,
                        basis.observed_at,
                        basis.settled,
                        basis.posted,
                    )
                )
        names = holding_identities(ctx.session, [seen.holding_ref for seen in drifting])
        found = [_finding(seen, names[seen.holding_ref], grace) for seen in drifting]
        self._record(ctx.session, checked, through, ctx.now)
        watermarks.write(
            ctx.session, POSTINGS_READ_BEFORE, watermarks.read(ctx.session, POSTINGS_READ), ctx.now
        )
        watermarks.write(ctx.session, POSTINGS_READ, through, ctx.now)
        previous_snapshots = watermarks.read(ctx.session, SNAPSHOTS_READ)
        watermarks.write(ctx.session, SNAPSHOTS_READ_BEFORE, previous_snapshots, ctx.now)
        watermarks.write(ctx.session, SNAPSHOTS_READ, int(snapshots_through or 0), ctx.now)
        previous_cursors = watermarks.read(ctx.session, CURSORS_READ)
        watermarks.write(ctx.session, CURSORS_READ_BEFORE, previous_cursors, ctx.now)
        watermarks.write(ctx.session, CURSORS_READ, int(cursors_through or 0), ctx.now)
        keep_unsettled(ctx.session, unsettled, ctx.now)
        watermarks.write(ctx.session, GRACE_JUDGED, grace, ctx.now)
        return Assessment(kinds=self.kinds, findings=found, undecided=undecided)

    def _record(
        self,
        session: Session,
        bases: list[tuple[Basis, int, bool]],
        through: int,
        now: datetime,
    ) -> None:
        """Write the checks that changed, set-wise: new snapshots inserted, others updated."""
        fresh, changed = [], []
        for basis, posted, consistent in bases:
            values = {
                "holding_id": basis.holding_id,
                "observed_at": basis.observed_at,
                "settled_minor": basis.settled,
                "posted_minor": posted,
                "drift_minor": basis.settled - posted,
                "explained_by_lag": consistent and basis.settled != posted,
                "postings_through_id": through,
                "checked_at": now,
            }
            if basis.prev_snapshot_id != basis.snapshot_id:
                fresh.append({"snapshot_id": basis.snapshot_id, **values})
            elif basis.prev_posted != posted:
                changed.append({"b_snapshot_id": basis.snapshot_id, **values})
        if fresh:
            session.execute(insert(checks), fresh)
        if changed:
            session.execute(
                update(checks)
                .where(checks.c.snapshot_id == bindparam("b_snapshot_id"))
                .values({k: bindparam(k) for k in changed[0] if k != "b_snapshot_id"}),
                changed,
            )
