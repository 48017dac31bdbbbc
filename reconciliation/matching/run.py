"""One matching run: the rules in order of strength, each set-based, in batches.

1. postings in the backlog, then those new to this pass in id batches: receiptRef
   (+ transferRef) -> rules transfer_ref / receipt_ref; each batch queues what it could not
   match and moves the watermark, in its own transaction;
2. transfers that became known after their legs matched are attached;
3. backlog and new transfers (batched the same way): failures with their TRANSACTION_FAILED;
4. everything still waiting without a receipt: account number, amount, window;
5. the backlog and the watermarks are settled (matching.backlog).

Each batch is its own unit of work (`checkpoint` commits it with its rows, its backlog entries
and its watermark), so a pass stopped half-way leaves a consistent store and the next pass
carries on where it stopped. Running it twice changes nothing: items with an active row are
never candidates again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import Table
from sqlalchemy.orm import Session

from reconciliation.matching.accounts import match_by_account
from reconciliation.matching.backlog import (
    Frontier,
    active_row,
    enqueue_residue,
    in_backlog,
    read_frontier,
    settle,
)
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.receipts import match_postings_by_receipt
from reconciliation.matching.sql import BATCH_ROWS, ranges
from reconciliation.matching.status import mark_exceptions, max_match_id
from reconciliation.matching.transfers import attach_transfers, match_failures
from reconciliation.progress import Progress
from reconciliation.store.models import Posting, Transfer

postings: Table = Posting.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]


def match_all(
    session: Session,
    *,
    window_seconds: int,
    now: datetime,
    checkpoint: Callable[[], None],
    progress: Progress,
    batch_rows: int = BATCH_ROWS,
) -> MatchTally:
    """Run every matching rule over what is new or waiting; return what was matched."""
    tally = MatchTally()
    frontier = read_frontier(session)
    first_row = max_match_id(session)

    def run(batch: MatchTally, queue: tuple[str, int, int] | None = None) -> None:
        """Commit one batch: its exceptions, and (for an id range) what it leaves waiting."""
        mark_exceptions(session, batch.ambiguities)
        if queue is not None:
            enqueue_residue(session, *queue, first_row, now)
        checkpoint()
        tally.add(batch)

    for stream, table, rule in (
        ("posting", postings, match_postings_by_receipt),
        ("transfer", transfers, match_failures),
    ):
        lo, hi = frontier.new(stream)
        progress.phase(f"matching {stream}s", max(0, hi - lo + 1))
        waiting = in_backlog(stream, table.c.id) & ~active_row(stream, table.c.id)
        run(rule(session, waiting, now))
        for start, end in ranges(lo, hi, batch_rows):
            run(rule(session, table.c.id.between(start, end), now), (stream, start, end))
            progress.advance(end - start + 1)
        progress.done()
        if stream == "posting":
            attached = attach_transfers(session)
            tally.attached += len(attached)
            tally.status_suspects |= attached
            tally.attached_notifications |= attached
            checkpoint()

    progress.phase("matching by account and amount", 0)
    run(match_by_account(session, frontier, window_seconds, now))
    progress.done()
    _settle(session, frontier, first_row, now, checkpoint)
    return tally


def _settle(
    session: Session,
    frontier: Frontier,
    first_row: int,
    now: datetime,
    checkpoint: Callable[[], None],
) -> None:
    settle(session, frontier, first_row, now)
    checkpoint()
