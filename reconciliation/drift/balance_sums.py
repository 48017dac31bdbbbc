"""The posted sum behind each holding's judged snapshot, read incrementally and consistently.

Per holding: the snapshot to judge (the newest its poller has caught up with) and its latest
balance check (each by an index probe, so the cost does not grow with the history). The sum is
then built on the previous check instead of summing the ledger again:

    posted = previous check's sum
           + postings between the previous snapshot's time and this one's
           + postings stored since the previous check that landed behind its time (late ones)

or, for a holding never checked, the sum of everything up to the snapshot's time. Every
statement is set-based over one small temporary table of per-holding bases, and all of them run
in one consistent read (REPEATABLE READ on PostgreSQL; an explicit read transaction on SQLite,
whose WAL gives a snapshot): a poller committing postings and a snapshot meanwhile cannot make
the two disagree for us (invariant 9, docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Table, case, func, insert, literal, or_, select, text
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.schema import CreateTableAs

from reconciliation.matching.sql import tune_every_transaction
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import Watermark
from reconciliation.store.tables import activity_cursors as cursors
from reconciliation.store.tables import balance_checks as checks
from reconciliation.store.tables import balance_snapshots as snapshots
from reconciliation.store.tables import holdings, postings
from reconciliation.store.types import UTCDateTime, amount_sum, signed_amount, to_amount

#: balanceEffect that raises a balance; every other effect lowers it.
INCREASE: Final = "increase"


#: Watermark per holding (this prefix + the holding's id): the signed sum, in minor units, of
#: every posting retention removed (reconciliation.retention.reconciled writes it). A holding
#: never checked sums its postings from nothing, so it starts from what was removed; a rebuild,
#: which checks every holding afresh, is the case that needs it.
PRUNED_NET: Final = "retention.postings.pruned_net_minor."

#: Earlier than any posting: the lower bound of a holding never checked before.
NEVER: Final = literal(datetime(1970, 1, 1, tzinfo=UTC), UTCDateTime())

#: A posting's effect on its holding's balance, exact at any size on both databases.
SIGNED = signed_amount(postings.c.effect == INCREASE, postings.c.amount_minor)


@contextmanager
def consistent_read(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose statements all see one snapshot of the store; rolled back at the end."""
    with factory() as session:
        if session.get_bind().dialect.name == "sqlite":
            session.connection().exec_driver_sql("BEGIN")
        else:
            tune_every_transaction(session)
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        try:
            yield session
        finally:
            session.rollback()


@dataclass(slots=True)
class Basis:
    """One holding's latest snapshot, the check to build on, and the posted sum found."""

    holding_id: int
    holding_ref: str
    currency: str
    snapshot_id: int
    observed_at: datetime
    settled: int
    prev_snapshot_id: int | None
    prev_observed_at: datetime | None
    prev_posted: int
    caught_up: bool
    posted: int = 0


def latest_per_holding(table: Table, column: Any, *where: Any) -> Any:
    """`column` of the holding's newest row of `table` (snapshots or checks: by `observed_at`,
    then id) that meets `where`, correlated to `holdings`: one probe of the (holding_id,
    observed_at) index per holding, so the cost does not grow with the history."""
    return (
        select(column)
        .where(table.c.holding_id == holdings.c.id, *where)
        .order_by(table.c.observed_at.desc(), table.c.id.desc())
        .limit(1)
        # Correlated to everything around it but the probed table: nested in another probe,
        # it would otherwise take `holdings` into its own FROM and read every holding's rows.
        .correlate_except(table)
        .scalar_subquery()
    )


def _judged_snapshot() -> Any:
    """Per holding (correlated to `holdings` and its outer-joined `cursors` row): the snapshot
    to judge, the newest one its poller has caught up with, else (none yet: undecided) its
    newest.

    Not simply the newest: while the poller is behind the newest snapshot, postings that belong
    to an older one still arrive (a read that ended just after a snapshot was taken, a page
    committed late), and the snapshot judged last must take them in, or its check says what no
    fresh look at the same facts would (`recon rebuild` takes exactly that fresh look). A
    snapshot already checked counts as caught up whatever the cursor says now, so the judged
    one is never older than the last checked (whose check is then brought up to date).
    """
    s, c = snapshots, checks
    newest_checked_at = latest_per_holding(c, c.c.observed_at)
    caught_up = latest_per_holding(
        s,
        s.c.id,
        or_(
            cursors.c.holding_id.is_(None),
            s.c.observed_at <= cursors.c.last_polled_at,
            s.c.observed_at <= newest_checked_at,
        ),
    )
    return func.coalesce(caught_up, latest_per_holding(s, s.c.id))


def _basis_select(only: list[int] | None, *, fenced: bool) -> Any:
    s, c, h = snapshots, checks, holdings
    latest_check = latest_per_holding(c, c.c.id)
    judged = select(
        h.c.id.label("holding_id"),
        _judged_snapshot().label("snapshot_id"),
        latest_check.label("check_id"),
    ).select_from(h.outerjoin(cursors, cursors.c.holding_id == h.c.id))
    if only is not None:
        judged = judged.where(h.c.id.in_(only))
    # `fenced` (PostgreSQL): OFFSET 0 keeps the planner from pulling the subquery up. Pulled up,
    # the join below would match `s.id` against an expression of sub-plans, which no index probe
    # can take, so it hashed every snapshot in the store for each chunk of holdings (a read that
    # grew with the number of holdings, not with those judged). SQLite probes either way, and
    # its OFFSET needs a LIMIT bound that a CREATE TABLE AS cannot carry.
    latest = (judged.offset(0) if fenced else judged).subquery("latest")
    prev = c.alias("prev")
    usable = prev.c.observed_at <= s.c.observed_at
    caught_up = or_(
        cursors.c.holding_id.is_(None),
        cursors.c.last_polled_at >= s.c.observed_at,
        prev.c.snapshot_id == s.c.id,
    )
    return select(
        latest.c.holding_id,
        h.c.holding_ref,
        h.c.currency,
        s.c.id.label("snapshot_id"),
        s.c.observed_at,
        s.c.settled_minor.label("settled"),
        case((usable, prev.c.snapshot_id), else_=None).label("prev_snapshot_id"),
        case((usable, prev.c.observed_at), else_=None).label("prev_observed_at"),
        case((usable, prev.c.posted_minor), else_=None).label("prev_posted"),
        case((usable, prev.c.postings_through_id), else_=0).label("prev_through"),
        case((caught_up, 1), else_=0).label("caught_up"),
    ).select_from(
        latest.join(s, s.c.id == latest.c.snapshot_id)
        .join(h, h.c.id == latest.c.holding_id)
        .outerjoin(prev, prev.c.id == latest.c.check_id)
        .outerjoin(cursors, cursors.c.holding_id == latest.c.holding_id)
    )


def read_bases(session: Session, only: frozenset[int] | None = None) -> tuple[list[Basis], int]:
    """Every holding with a snapshot (or those of `only`), its posted sum filled in; and the
    highest posting id read. `only` goes in lists of at most CHUNK ids (one statement each)."""
    through_query = select(func.coalesce(func.max(postings.c.id), 0))
    if only is not None and not only:
        return [], int(session.execute(through_query).scalar_one())
    parts = [None] if only is None else list(chunks(sorted(only)))
    fenced = session.get_bind().dialect.name == "postgresql"
    build = CreateTableAs(_basis_select(parts[0], fenced=fenced), "balance_basis", temporary=True)
    session.execute(build)
    basis = build.table
    names = list(basis.c.keys())
    for part in parts[1:]:
        session.execute(insert(basis).from_select(names, _basis_select(part, fenced=fenced)))
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("ANALYZE balance_basis"))
    try:
        found = {
            r.holding_id: Basis(
                holding_id=r.holding_id,
                holding_ref=str(r.holding_ref),
                currency=r.currency,
                snapshot_id=r.snapshot_id,
                observed_at=r.observed_at,
                settled=to_amount(r.settled),
                prev_snapshot_id=r.prev_snapshot_id,
                prev_observed_at=r.prev_observed_at,
                prev_posted=_amount_or_zero(r.prev_posted),
                caught_up=bool(r.caught_up),
                posted=_amount_or_zero(r.prev_posted),
            )
            for r in session.execute(select(basis))
        }
        through = int(session.execute(through_query).scalar_one())
        for holding_id, amount in _sums(session, basis):
            found[holding_id].posted += amount
        for holding_id, amount in _pruned_nets(session):
            basis_row = found.get(holding_id)
            if basis_row is not None and basis_row.prev_observed_at is None:
                basis_row.posted += amount
    finally:
        basis.drop(session.connection())
    return list(found.values()), through


def _pruned_nets(session: Session) -> list[tuple[int, int]]:
    """(holding id, signed sum retention removed) for every holding retention pruned."""
    rows = session.execute(
        select(Watermark.name, Watermark.value).where(Watermark.name.startswith(PRUNED_NET))
    )
    return [(int(name[len(PRUNED_NET) :]), to_amount(value)) for name, value in rows]


def _amount_or_zero(value: object) -> int:
    return 0 if value is None else to_amount(value)


def _sums(session: Session, basis: Table) -> list[tuple[int, int]]:
    p, b = postings, basis
    ready = b.c.caught_up == 1
    joined = p.join(b, p.c.holding_id == b.c.holding_id)
    # Per holding, one correlated sum over its postings between the two snapshots: always an
    # index range on (holding_id, posted_at), however long the history. (As a join, the planner
    # cannot tell how narrow each holding's range is and hashes the whole postings table.)
    between = (
        select(amount_sum(SIGNED))
        .where(
            p.c.holding_id == b.c.holding_id,
            p.c.posted_at <= b.c.observed_at,
            p.c.posted_at > func.coalesce(b.c.prev_observed_at, NEVER),
        )
        .scalar_subquery()
    )
    forward = select(b.c.holding_id, between).where(
        ready, or_(b.c.prev_observed_at.is_(None), b.c.prev_observed_at < b.c.observed_at)
    )
    rows = [(int(h), _amount_or_zero(a)) for h, a in session.execute(forward)]
    floor = session.execute(
        select(func.min(b.c.prev_through)).where(ready, b.c.prev_observed_at.is_not(None))
    ).scalar_one_or_none()
    if floor is not None:
        late = (
            select(b.c.holding_id, amount_sum(SIGNED))
            .select_from(joined)
            .where(
                ready,
                p.c.id > floor,
                p.c.id > b.c.prev_through,
                p.c.posted_at <= b.c.prev_observed_at,
            )
            .group_by(b.c.holding_id)
        )
        rows += [(int(h), _amount_or_zero(a)) for h, a in session.execute(late)]
    return rows


def grace_postings(
    session: Session, bases: list[Basis], grace_seconds: int
) -> dict[int, list[int]]:
    """For the given holdings: signed amounts posted within the grace before the snapshot."""
    found: dict[int, list[int]] = {}
    for basis in bases:
        p = postings
        query = (
            select(SIGNED)
            .where(
                p.c.holding_id == basis.holding_id,
                p.c.posted_at <= basis.observed_at,
                p.c.posted_at > basis.observed_at - timedelta(seconds=grace_seconds),
            )
            .order_by(p.c.posted_at, p.c.receipt_ref, p.c.line_ref)
        )
        found[basis.holding_id] = [to_amount(a) for a in session.scalars(query)]
    return found
