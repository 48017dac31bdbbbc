"""One matching run: the rules in order of strength, one set-based statement per rule.

1. postings new to this pass and those waiting in the backlog, in one statement: receiptRef
   (+ transferRef) -> rules transfer_ref / receipt_ref; postings no notification names are
   kept aside (a temporary table) for rule 3;
2. transfers that became known after their legs matched are attached;
3. new and backlog transfers the same way: failures with their TRANSACTION_FAILED;
4. notifications still waiting without a receipt against rule 1's leftover postings: account
   number, amount, window;
5. rule 1's leftover debits that rule 4 did not take, against the transfers whose fee they
   may be (matching.fee_legs): a fee leg posted under a receipt of its own;
6. what is still unmatched joins the backlog, the backlog is pruned and the watermarks move
   (matching.backlog.settle).

Why one statement per rule over all the new rows, and not id batches: each batch hashed the
whole of the other streams again (a 3M-record pass read notifications and transfers five times
over), and each batch queued its leftovers in the backlog only for the account rule to take
some of them out again. PostgreSQL joins a million rows in one hash join faster than in five.
The new ids and the backlog are two branches of one UNION ALL inside a rule's statement (each
read through its own index), and a branch with nothing to read (no new ids, an empty backlog)
is left out, so an incremental pass sends a handful of statements per rule.

The run is one unit of work (`checkpoint` commits it once, at the end, with the backlog and the
watermarks), so a pass stopped half-way leaves the store as it was and the next pass does the
same work again. Running it twice changes nothing: items with an active row are never
candidates again, and new ids are new only until the watermark moves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table
from sqlalchemy.orm import Session

from reconciliation.matching.accounts import match_by_account
from reconciliation.matching.backlog import active_row, in_backlog, settle
from reconciliation.matching.fee_legs import match_fee_legs
from reconciliation.matching.frontier import Frontier, read_frontier
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.receipts import match_postings_by_receipt
from reconciliation.matching.scratch import drop
from reconciliation.matching.sql import ANALYZE_AFTER_ROWS, refresh_statistics
from reconciliation.matching.status import mark_exceptions
from reconciliation.matching.transfers import attach_transfers, match_failures
from reconciliation.progress import Progress
from reconciliation.store.tables import postings, transfers


def anchors(frontier: Frontier, stream: str, table: Table) -> list[ColumnElement[bool]]:
    """The disjoint sets of a stream's items a rule anchored on it reads: new ids, backlog."""
    found: list[ColumnElement[bool]] = []
    if frontier.has_new(stream):
        found.append(table.c.id.between(*frontier.new(stream)))
    if stream in frontier.waiting:
        found.append(in_backlog(stream, table.c.id) & ~active_row(stream, table.c.id))
    return found


def match_all(
    session: Session,
    *,
    window_seconds: int,
    now: datetime,
    checkpoint: Callable[[], None],
    progress: Progress,
    seconds: dict[str, float] | None = None,
    ceiling: Mapping[str, int] | None = None,
) -> MatchTally:
    """Run every matching rule over what is new or waiting; return what was matched.

    seconds: if given, receives the wall time of each step by name.
    ceiling: per stream, the highest id to read (`frontier.read_frontier`); None: the tops.
    """
    tally = MatchTally()
    clock = _Clock(seconds if seconds is not None else {})

    def run(batch: MatchTally) -> None:
        """Set aside what a rule found ambiguous before the next rule looks at the items."""
        mark_exceptions(session, batch.ambiguities)
        tally.add(batch)

    with clock("frontier"):
        frontier = read_frontier(session, ceiling)
    leftovers: Table | None = None

    lo, hi = frontier.new("posting")
    progress.phase("matching postings", max(0, hi - lo + 1))
    with clock("receipts"):
        posting_anchors = anchors(frontier, "posting", postings)
        if posting_anchors:
            found, leftovers = match_postings_by_receipt(session, posting_anchors, now)
            run(found)
    progress.advance(max(0, hi - lo + 1))
    progress.done()
    if "transferless" in frontier.waiting:
        with clock("attach"):
            attached = attach_transfers(session)
            tally.attached += len(attached)
            tally.status_suspects |= attached
            tally.attached_notifications |= attached

    lo, hi = frontier.new("transfer")
    progress.phase("matching transfers", max(0, hi - lo + 1))
    with clock("failures"):
        transfer_anchors = anchors(frontier, "transfer", transfers)
        if transfer_anchors:
            unseen_after = frontier.seen["notification"]
            run(match_failures(session, transfer_anchors, now, unseen_after=unseen_after))
    progress.advance(max(0, hi - lo + 1))
    progress.done()

    progress.phase("matching by account and amount", 0)
    if leftovers is not None:
        with clock("accounts"):
            run(match_by_account(session, frontier, window_seconds, now, leftovers))
        with clock("fee legs"):
            tally.add(match_fee_legs(session, window_seconds, now, leftovers))
    progress.done()
    with clock("settle"):
        if tally.rows >= ANALYZE_AFTER_ROWS:
            refresh_statistics(session, "matches")
        settle(session, frontier, leftovers, now)
        if leftovers is not None:
            drop(session, leftovers)
    with clock("commit"):
        checkpoint()
    return tally


class _Clock:
    """Adds the wall time of each named step to `seconds`."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds

    @contextmanager
    def __call__(self, step: str) -> Iterator[Any]:
        started = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - started
            self.seconds[step] = self.seconds.get(step, 0.0) + took
