"""Where a pass starts and stops in each stream: the watermarks, the tops, and in-flight writers.

Each stream (postings, notifications, transfers) has a watermark: every id at or below it has
been seen by a pass. A pass reads the ids above it, up to the top it found at its start.

PostgreSQL hands out ids from a sequence before commit, so a row with a lower id can become
visible after one with a higher id. Before reading, a pass therefore waits (briefly) for the
transactions that were writing to a stream table when it read the tops: once they are
finished, every id up to the tops is either visible or never will be, and moving the watermark
loses nothing. Those writers are the ones holding ROW EXCLUSIVE on a stream table in this
database: an INSERT takes that lock before it draws its id from the sequence, and keeps it to
the end of its transaction. (Waiting for every transaction of the cluster instead, as the
snapshot's running transaction ids would say, makes a pass wait for work in other databases
that can never write here: on a shared server, most of an incremental pass.)
SQLite has one writer at a time and numbers rows max + 1, so nothing is ever behind it.

A `ceiling` caps the tops: a rebuild's pass on its scratch copy goes exactly as far into each
stream as the live store's last pass went (`match.seen.*` there), no further, so both judged
the same items (`reconciliation.rebuild.horizon`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import structlog
from sqlalchemy import Table, bindparam, exists, func, select, text
from sqlalchemy.orm import Session

from reconciliation.store import watermarks
from reconciliation.store.tables import match_backlog as backlog
from reconciliation.store.tables import notifications, postings, transfers

#: Stream -> (its table, its column in matches).
STREAMS: Final[dict[str, tuple[Table, str]]] = {
    "posting": (postings, "posting_id"),
    "notification": (notifications, "notification_id"),
    "transfer": (transfers, "transfer_id"),
}

#: Kinds of backlog entries: one per stream, and matched notifications awaiting their transfer.
BACKLOG_KINDS: Final = (*STREAMS, "transferless")

#: How long a pass waits for writers that were mid-transaction when it started.
WRITER_WAIT_SECONDS: Final = 10.0

#: How often a waiting pass looks again: a writer's transaction is a few milliseconds.
WRITER_POLL_SECONDS: Final = 0.02


log = structlog.get_logger(__name__)

#: Transactions (virtual ids) other than ours holding ROW EXCLUSIVE on a stream table here.
_WRITERS = text(
    "SELECT DISTINCT virtualtransaction FROM pg_locks "
    "WHERE locktype = 'relation' AND mode = 'RowExclusiveLock' AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND relation = ANY(CAST(:tables AS regclass[])) AND pid <> pg_backend_pid()"
).bindparams(bindparam("tables", value=[t.name for t, _ in STREAMS.values()]))

#: Which of the given virtual transaction ids are still running (each holds its own id's lock).
_STILL_RUNNING = text(
    "SELECT virtualxid FROM pg_locks "
    "WHERE locktype = 'virtualxid' AND virtualxid = ANY(CAST(:running AS text[]))"
)


def watermark_name(stream: str) -> str:
    return f"match.seen.{stream}"


@dataclass(frozen=True, slots=True)
class Frontier:
    """Per stream: the highest id seen by earlier passes, and the top this pass goes to.

    waiting: the backlog kinds that had entries when the pass began (the others need no look).
    """

    seen: dict[str, int]
    top: dict[str, int]
    waiting: frozenset[str] = frozenset(BACKLOG_KINDS)

    def new(self, stream: str) -> tuple[int, int]:
        """The inclusive id range this pass sees for the first time (empty when lo > hi)."""
        return self.seen[stream] + 1, self.top[stream]

    def has_new(self, stream: str) -> bool:
        lo, hi = self.new(stream)
        return lo <= hi


def read_frontier(session: Session, ceiling: Mapping[str, int] | None = None) -> Frontier:
    """Watermarks, current tops and which backlog kinds hold entries (one statement); on
    PostgreSQL, after in-flight writers. `ceiling`: per stream, the highest id to go to."""
    seen = {s: watermarks.read(session, watermark_name(s), 0) for s in STREAMS}
    tops = [
        select(func.coalesce(func.max(t.c.id), 0)).scalar_subquery() for t, _ in STREAMS.values()
    ]
    queued = [exists().where(backlog.c.kind == kind) for kind in BACKLOG_KINDS]
    row = session.execute(select(*tops, *queued)).one()
    top = {s: int(value) for s, value in zip(STREAMS, row, strict=False)}
    if ceiling is not None:
        top = {s: min(value, ceiling.get(s, value)) for s, value in top.items()}
    flags = row[len(STREAMS) :]
    waiting = frozenset(kind for kind, flag in zip(BACKLOG_KINDS, flags, strict=True) if flag)
    if session.get_bind().dialect.name == "postgresql":
        _wait_for_writers(session)
    return Frontier(
        seen=seen,
        top={s: max(top[s], seen[s]) for s in STREAMS},
        waiting=waiting,
    )


def _wait_for_writers(session: Session) -> None:
    running = [str(x) for x in session.execute(_WRITERS).scalars()]
    deadline = time.monotonic() + WRITER_WAIT_SECONDS
    while running:
        running = [str(x) for x in session.execute(_STILL_RUNNING, {"running": running}).scalars()]
        if not running:
            return
        if time.monotonic() > deadline:
            log.warning("matching.writers_still_running", transactions=len(running))
            return
        time.sleep(WRITER_POLL_SECONDS)
