"""Which holdings' balance verdicts can have moved since the last pass, and the standing rest.

A holding's verdict is a function of its judged snapshot and the postings at or before that
snapshot's time. It can move only when:

- a snapshot newer than its latest check exists (a new one, or one waiting for the poller to
  read past it: the cursor moving is what makes it judgeable), or the holding was never
  checked at all;
- a posting stored since the last read landed at or before its latest check's time, numbered
  above the postings that check summed (a late one: it changes the checked sum);
- the projection grace changed (it decides whether a difference is lag).

A posting after the check's time moves nothing until a snapshot after it arrives, and then the
first case re-judges the holding. So a pass looks only at the holdings something touched: those
with postings or snapshots stored since the last read, those whose activity cursor changed
since then (`changed_ms`, the database's clock: a read released past a waiting snapshot is what
makes it judgeable), and those the last pass left in drift (`UNSETTLED`: a drift stands and is
reported again every pass). A holding waiting for its poller is not kept in view: its cursor
changing brings it back, so the holdings read since the last pass are looked at, not every
holding whose snapshot came after its last read (with a snapshot after every read, nearly all of
them). Every other holding's latest check is consistent and judged its newest snapshot, so
nothing is read for it: the pass's cost follows what changed, not the number of holdings. Of the
holdings looked at, only those whose verdict can have moved are summed again; the others'
verdict is their latest check, as stored (`Standing`). The scans for new rows start one read
earlier than the last (`Floors`): a page committed just after a pass's read began, numbered (or
stamped) below rows that read saw, is still looked at by the next pass (and summed when its
number is above what its holding's check summed, as drift.balance_sums sums late postings).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import BigInteger, CompoundSelect, cast, delete, func, insert, select, union
from sqlalchemy.orm import Session

from reconciliation.drift.balance_sums import latest_per_holding
from reconciliation.store.models import Watermark
from reconciliation.store.tables import activity_cursors as cursors
from reconciliation.store.tables import balance_checks as checks
from reconciliation.store.tables import balance_snapshots as snapshots
from reconciliation.store.tables import holdings, postings
from reconciliation.store.types import to_amount

#: Watermark per holding (this prefix + the holding's id) the last pass left in drift: the drift
#: stands and is reported again every pass, so the next pass looks at it even when nothing new
#: touched it. (A few rows: a holding waiting for its poller is brought back by its cursor.)
UNSETTLED: Final = "balance.unsettled."


@dataclass(frozen=True, slots=True)
class Floors:
    """Where the scans for what is new since the last read start: a posting id, a snapshot id
    and a cursor's `changed_ms`, each as the read before the last saw it (one read back)."""

    postings: int
    snapshots: int
    cursors: int


@dataclass(frozen=True, slots=True)
class Comparison:
    """A snapshot's settled amount against its holding's posted sum: judged now, or standing
    from the latest check (told the same way either way: an alert's subject and evidence do not
    change because a pass had no need to sum again)."""

    holding_ref: str
    currency: str
    snapshot_id: int
    observed_at: datetime
    settled: int
    posted: int


@dataclass(frozen=True, slots=True)
class Standing:
    """A holding's latest balance check, still its verdict (nothing since can move it)."""

    holding_id: int
    comparison: Comparison
    consistent: bool


@dataclass(frozen=True, slots=True)
class Changes:
    """The holdings to judge again (None: every one) and the verdicts that stand."""

    to_judge: frozenset[int] | None
    standing: list[Standing]


def _touched(floors: Floors) -> CompoundSelect[Any]:
    """Ids of the holdings a pass looks at: postings or snapshots stored above the floors (two
    primary-key ranges), cursors changed since (an index range), and those left in drift."""
    unsettled = cast(func.substr(Watermark.name, len(UNSETTLED) + 1), BigInteger)
    return union(
        select(postings.c.holding_id).where(postings.c.id > floors.postings),
        select(snapshots.c.holding_id).where(snapshots.c.id > floors.snapshots),
        select(cursors.c.holding_id).where(cursors.c.changed_ms > floors.cursors),
        select(unsettled).where(Watermark.name.startswith(UNSETTLED)),
    )


def find_changes(session: Session, floors: Floors, *, judge_all: bool) -> Changes:
    """Split the holdings touched since the last read (see `_touched`) into those to judge again
    and those whose check stands, reading per holding its newest snapshot's id and check (two
    index probes) and the postings stored above the floor (an id)."""
    if judge_all:
        return Changes(to_judge=None, standing=[])
    c, s = checks, snapshots
    newest = latest_per_holding(s, s.c.id).label("newest_snapshot_id")
    # OFFSET 0 keeps PostgreSQL from pulling the subquery up into the join, which would run
    # the probe once per place it is named instead of once per holding.
    per_holding = (
        select(holdings.c.id, holdings.c.holding_ref, holdings.c.currency, newest)
        .where(holdings.c.id.in_(_touched(floors)))
        .offset(0)
        .subquery()
    )
    rows = session.execute(
        select(
            per_holding,
            c.c.snapshot_id,
            c.c.observed_at,
            c.c.settled_minor,
            c.c.posted_minor,
            c.c.explained_by_lag,
            c.c.postings_through_id,
        )
        .select_from(per_holding.outerjoin(c, c.c.snapshot_id == per_holding.c.newest_snapshot_id))
        .where(per_holding.c.newest_snapshot_id.is_not(None))
    ).all()
    to_judge: set[int] = set()
    standing: dict[int, tuple[Standing, int]] = {}
    for row in rows:
        if row.snapshot_id is None:
            to_judge.add(row.id)  # its newest snapshot is not checked: judge it (or wait for it)
            continue
        comparison = Comparison(
            holding_ref=str(row.holding_ref),
            currency=row.currency,
            snapshot_id=row.snapshot_id,
            observed_at=row.observed_at,
            settled=to_amount(row.settled_minor),
            posted=to_amount(row.posted_minor),
        )
        consistent = comparison.settled == comparison.posted or bool(row.explained_by_lag)
        standing[row.id] = (
            Standing(row.id, comparison, consistent),
            int(row.postings_through_id),
        )
    if standing:
        # Late postings: stored above the floor, at or before their holding's checked snapshot,
        # and numbered above what that check summed. The bounds keep the rest in the database:
        # postings after every check (the usual case), and those every check has summed (all of
        # them, the first pass after a full one).
        behind = max(check.comparison.observed_at for check, _ in standing.values())
        above = max(floors.postings, min(through for _, through in standing.values()))
        late = session.execute(
            select(postings.c.holding_id, postings.c.id, postings.c.posted_at).where(
                postings.c.id > above, postings.c.posted_at <= behind
            )
        )
        for holding_id, posting_id, posted_at in late:
            check, through = standing.get(holding_id, (None, 0))
            if check and posting_id > through and posted_at <= check.comparison.observed_at:
                to_judge.add(holding_id)
    kept = [check for h, (check, _) in standing.items() if h not in to_judge]
    return Changes(to_judge=frozenset(to_judge), standing=kept)


def keep_unsettled(session: Session, holding_ids: Collection[int], now: datetime) -> None:
    """Replace the unsettled marks with `holding_ids` (a few rows: the holdings in drift)."""
    session.execute(delete(Watermark).where(Watermark.name.startswith(UNSETTLED)))
    if holding_ids:
        rows = [
            {"name": f"{UNSETTLED}{h}", "value": 0, "updated_at": now} for h in sorted(holding_ids)
        ]
        session.execute(insert(Watermark), rows)
