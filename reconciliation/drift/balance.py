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
The highest posting id
the read saw is kept too (`POSTINGS_READ`): a rebuild copies the postings up to it, so its sums
are made of the postings this pass summed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from foundation.money import format_money
from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding, fingerprint
from reconciliation.drift.balance_sums import Basis, consistent_read, grace_postings, read_bases
from reconciliation.drift.base import DriftContext
from reconciliation.postings.holding_identity import holding_identities
from reconciliation.store import watermarks
from reconciliation.store.tables import balance_checks as checks

KIND: Final = "balance_mismatch"
#: Watermark: the highest posting id the last pass's balance read saw.
POSTINGS_READ: Final = "balance.postings_read"
SEVERITY: Final = "critical"


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
            bases, through = read_bases(read)
            # Only a holding whose sum differs needs its last postings, to see if lag explains it.
            differing = [b for b in bases if b.caught_up and b.settled != b.posted]
            in_grace = grace_postings(read, differing, grace)
        undecided = frozenset(fingerprint(KIND, b.holding_ref) for b in bases if not b.caught_up)
        found = []
        checked: list[tuple[Basis, int, bool]] = []
        names = holding_identities(ctx.session, [b.holding_ref for b in differing])
        for basis in bases:
            if not basis.caught_up:
                continue
            posted = basis.posted
            lagging = in_grace.get(basis.holding_id, [])
            consistent = explained_by_lag(basis.settled, posted, lagging)
            checked.append((basis, posted, consistent))
            if consistent:
                continue
            drift = basis.settled - posted
            holding = names[basis.holding_ref]
            found.append(
                Finding(
                    kind=KIND,
                    severity=SEVERITY,
                    subject=(
                        f"{holding.phrase}: balance "
                        f"{format_money(basis.settled, basis.currency)} but its postings sum to "
                        f"{format_money(posted, basis.currency)} "
                        f"(drift {format_money(drift, basis.currency, signed=True)})"
                    ),
                    fingerprint=fingerprint(KIND, basis.holding_ref),
                    evidence={
                        **holding.as_evidence(),
                        "currency": basis.currency,
                        "snapshotId": basis.snapshot_id,
                        "observedAt": basis.observed_at.isoformat(),
                        "settledMinor": str(basis.settled),
                        "postedMinor": str(posted),
                        "driftMinor": str(drift),
                        "projectionGraceSeconds": grace,
                    },
                )
            )
        self._record(ctx.session, checked, through, ctx.now)
        watermarks.write(ctx.session, POSTINGS_READ, through, ctx.now)
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
