"""`rebuild`: facts into a scratch store, the derived state recomputed there, then compared.

1. A fresh scratch (`scratch.create`: no secondary indexes yet, UNLOGGED on PostgreSQL).
2. One transaction on the live store (REPEATABLE READ on PostgreSQL, so every table is read at
   one moment): read the live pass's marks (`horizon.read_horizon`), copy the facts up to them
   (`facts.copy_facts`), read the inbox again into notifications
   (`notifications.rebuild_notifications`, the bodies read by worker processes over a large
   inbox), and mark what people took apart as exceptions. On PostgreSQL the transaction's
   snapshot is shared with a second connection that digests the live derived state of that
   same moment (`live_digest`) while step 3 runs.
3. The scratch's indexes and statistics; the alerts processing raises for deliveries no payload
   shape reads, then one full reconciliation pass (`reconciliation.reconcile.run_pass`,
   unchanged) on the scratch, as of the live store's last pass and reading each matching
   stream only as far as that pass did, so both states judged the same facts at the same
   moment. Facts that came after the live pass are counted as not yet judged, never compared.
4. Digests and differences (`compare.compare`).
5. Then, by mode: keep the scratch for a person to inspect, drop it (dry run), or swap the
   rebuilt state into the live tables in one transaction (`swap.swap`) and drop it.

Log lines written while the scratch is worked on (the pass's `alert.opened`, say) carry
`rebuild_scratch`, so nobody mistakes them for the live store's. Alert changes are logged at
info (reconciliation.alerts.lifecycle.log_change), so a command that shows warnings only
prints the rebuild's result and nothing of its scratch pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any, Final

import structlog
from sqlalchemy import Connection, Engine

import reconciliation.rebuild.scratch as scratch_store
from reconciliation import pass_lease
from reconciliation.notifications.shape_alerts import raise_shape_alerts
from reconciliation.policy import ReconcilePolicy
from reconciliation.rebuild.compare import Comparison, compare
from reconciliation.rebuild.digest import StateDigest, state_digest
from reconciliation.rebuild.facets import tables_in
from reconciliation.rebuild.facts import CopiedFacts, copy_facts, restore_unmatched_exceptions
from reconciliation.rebuild.horizon import Horizon, drop_unjudged_notifications, read_horizon
from reconciliation.rebuild.live_digest import SnapshotDigest
from reconciliation.rebuild.notifications import NotificationTally, rebuild_notifications
from reconciliation.rebuild.reading import workers_for
from reconciliation.rebuild.swap import FactsMark, facts_mark, swap
from reconciliation.reconcile import LAST_PASS_AT, run_pass
from reconciliation.store import watermarks
from reconciliation.store.db import make_session_factory
from reconciliation.store.types import utcnow
from upstream import PayloadReader

log = structlog.get_logger(__name__)


#: Longest wait for a running pass to give the lease back: far above a normal pass (seconds to
#: a minute over millions of rows), well below the lease's own expiry.
LEASE_WAIT_SECONDS: Final = 300.0
#: How often the waiting rebuild asks again.
LEASE_POLL_SECONDS: Final = 0.1


class RebuildError(Exception):
    """The rebuild could not be done as asked; the message says why and what to do."""


class Mode(Enum):
    """What happens to the rebuilt state once it is compared."""

    KEEP = "keep"
    DRY_RUN = "dry-run"
    SWAP = "swap"


@dataclass(slots=True)
class RebuildResult:
    """What a rebuild found (and, with swap, did)."""

    mode: Mode
    scratch: str
    #: When the live pass whose judgement is rebuilt ran (None until the marks are read).
    as_of: datetime | None
    copied: CopiedFacts = field(default_factory=CopiedFacts)
    horizon: Horizon | None = None
    inbox: NotificationTally = field(default_factory=NotificationTally)
    comparison: Comparison | None = None
    swapped: dict[str, int] | None = None
    after_swap: StateDigest | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe summary for the CLI and logs."""
        return {
            "mode": self.mode.value,
            "scratch": self.scratch,
            "asOf": self.as_of.isoformat() if self.as_of else None,
            "copied": self.copied.rows,
            "horizon": self.horizon.as_dict() if self.horizon else None,
            "inbox": {
                "read": self.inbox.read,
                "notifications": self.inbox.notifications,
                "quarantined": self.inbox.quarantined,
                "restated": self.inbox.restated,
                "newIds": self.inbox.new_ids,
            },
            "comparison": self.comparison.as_dict() if self.comparison else None,
            "swapped": self.swapped,
            "afterSwap": self.after_swap.as_dict() if self.after_swap else None,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Record how long the block took under `step` (when it finishes)."""
        clock = time.perf_counter()
        yield
        self.seconds[step] = time.perf_counter() - clock


def last_pass_time(live: Engine) -> datetime | None:
    """When the live store's last committed pass ran (None: never)."""
    with make_session_factory(live)() as session:
        millis = watermarks.read(session, LAST_PASS_AT, 0)
    return watermarks.from_millis(millis) if millis else None


class BetweenPasses:
    """The pass lease, held while the rebuild reads the live pass's marks and state.

    A pass commits its matching (with the `match.seen.*` marks) before its drift rules and the
    rest of its marks: read in between, the marks would belong to two passes. So the rebuild
    takes the lease, waiting for a running pass to finish, and gives it back once what it reads
    of the live store is fixed: on PostgreSQL as soon as its snapshot is taken (the facts, the
    marks and the live digest all come from it), on SQLite (no snapshot to share with the
    digest) once the comparison is done. Passes skip their turn meanwhile, as they do when
    another pass runs.
    """

    def __init__(self, live: Engine) -> None:
        self._sessions = make_session_factory(live)
        self._owner = pass_lease.lease_owner()
        self._held = False

    def take(self) -> None:
        deadline = time.monotonic() + LEASE_WAIT_SECONDS
        while not pass_lease.acquire(self._sessions, self._owner, utcnow()):
            if time.monotonic() > deadline:
                raise RebuildError(
                    f"a reconciliation pass has held the pass lease for over "
                    f"{LEASE_WAIT_SECONDS:.0f} s; rebuild once it has finished"
                )
            time.sleep(LEASE_POLL_SECONDS)
        self._held = True

    def give_back(self) -> None:
        if self._held:
            pass_lease.release(self._sessions, self._owner)
            self._held = False


def _fill(
    connection: Connection,
    scratch: scratch_store.Scratch,
    reader: PayloadReader,
    result: RebuildResult,
    workers: int | None,
    digests: ExitStack,
    lease: BetweenPasses,
) -> tuple[FactsMark, SnapshotDigest | None]:
    """Read the live pass's marks, copy the facts up to them and read the inbox again, in one
    transaction; on PostgreSQL also start the live digest in that transaction's snapshot
    (entered on `digests`)."""
    live_digest = None
    lease.take()
    with connection.begin():
        snapshot = None
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            snapshot = connection.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one()
        horizon = result.horizon = read_horizon(connection)
        if snapshot is not None:
            lease.give_back()
        result.as_of = result.as_of or horizon.passed_at or utcnow()
        if snapshot is not None:
            live_digest = digests.enter_context(
                SnapshotDigest(scratch.live, str(snapshot), horizon)
            )
        mark = facts_mark(connection)
        with result.timed("copy facts"):
            result.copied = copy_facts(connection, scratch.schema, horizon)
        with result.timed("notifications"):
            rows = result.copied.rows["deliveries"]
            processes = workers_for(rows, connection.dialect.name, workers)
            result.inbox = rebuild_notifications(
                connection, scratch.schema, reader, processes, up_to=horizon.deliveries
            )
            drop_unjudged_notifications(connection, tables_in(scratch.schema), horizon)
            restore_unmatched_exceptions(connection, scratch.schema)
    return mark, live_digest


def rebuild(
    live: Engine,
    policy: ReconcilePolicy,
    reader: PayloadReader,
    *,
    mode: Mode = Mode.KEEP,
    as_of: datetime | None = None,
    workers: int | None = None,
) -> RebuildResult:
    """Rebuild the derived state beside the live one, compare, then keep, drop or swap it.

    `workers`: processes reading the inbox's bodies (None: `reading.workers_for` decides, one per
    CPU over a large inbox on PostgreSQL; 0: this process reads them all). They are started
    with `spawn`, which imports the caller's main module again in each: a script that calls
    `rebuild` must do so under `if __name__ == "__main__"` (as `recon` does)."""
    started = time.perf_counter()
    scratch = scratch_store.scratch_for(live)
    result = RebuildResult(mode=mode, scratch=scratch.describe(), as_of=as_of)
    lease = BetweenPasses(live)
    with structlog.contextvars.bound_contextvars(rebuild_scratch=scratch.describe()):
        try:
            with result.timed("create scratch"):
                scratch_store.create(scratch)
            with ExitStack() as digests:
                with scratch_store.workbench(scratch) as connection:
                    mark, live_digest = _fill(
                        connection, scratch, reader, result, workers, digests, lease
                    )
                if live_digest is not None:
                    live_digest.go()
                assert result.as_of is not None  # set from the marks, or given
                _derive(scratch, policy, reader, result.as_of, result)
                with result.timed("compare"), scratch_store.workbench(scratch) as connection:
                    result.comparison = compare(
                        connection,
                        scratch.schema,
                        live=live_digest.result() if live_digest is not None else None,
                        horizon=result.horizon,
                        live_copies=(
                            partial(live_digest.copy_rows, scratch.schema)
                            if live_digest is not None
                            else None
                        ),
                    )
            lease.give_back()
            if mode is Mode.SWAP:
                _swap(live, scratch, mark, result)
        finally:
            lease.give_back()
            scratch.close()
            if mode is not Mode.KEEP:
                scratch_store.drop(scratch)
    result.seconds["total"] = time.perf_counter() - started
    log.info("rebuild.done", mode=mode.value, same=result.comparison and result.comparison.same)
    return result


def _derive(
    scratch: scratch_store.Scratch,
    policy: ReconcilePolicy,
    reader: PayloadReader,
    as_of: datetime,
    result: RebuildResult,
) -> None:
    """Indexes and statistics on the filled scratch, the shape alerts, then the pass."""
    with result.timed("indexes"):
        scratch_store.build_indexes(scratch)
    with result.timed("analyze"):
        scratch_store.analyze(scratch)
    with result.timed("pass"):
        scratch_sessions = make_session_factory(scratch.engine)
        with scratch_sessions.begin() as session:
            raise_shape_alerts(session, result.inbox.problems, reader.shapes, as_of)
        ceiling = result.horizon.seen if result.horizon is not None else None
        run_pass(scratch_sessions, policy, now=as_of, publish=False, ceiling=ceiling)


def _swap(
    live: Engine, scratch: scratch_store.Scratch, mark: FactsMark, result: RebuildResult
) -> None:
    sessions = make_session_factory(live)
    owner = pass_lease.lease_owner()
    now = utcnow()
    if not pass_lease.acquire(sessions, owner, now):
        raise RebuildError(
            "a reconciliation pass is running on the live store; swap when it has finished"
        )
    try:
        with result.timed("swap"), scratch_store.workbench(scratch) as connection:
            with connection.begin():
                result.swapped = swap(connection, scratch.schema, mark, now, result.horizon)
            result.after_swap = state_digest(connection, None, result.horizon)
    finally:
        pass_lease.release(sessions, owner)
