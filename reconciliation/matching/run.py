"""One matching run: the rules in order of strength, one set-based statement per rule and anchor.

1. postings waiting in the backlog, then every posting new to this pass, in one statement:
   receiptRef (+ transferRef) -> rules transfer_ref / receipt_ref;
2. transfers that became known after their legs matched are attached;
3. backlog and new transfers the same way: failures with their TRANSACTION_FAILED;
4. everything still waiting without a receipt: account number, amount, window;
5. what is still unmatched joins the backlog, the backlog is pruned and the watermarks move
   (matching.backlog.settle).

Why one statement per rule over all the new rows, and not id batches: each batch hashed the
whole of the other streams again (a 3M-record pass read notifications and transfers five times
over), and each batch queued its leftovers in the backlog only for the account rule to take
some of them out again. PostgreSQL joins a million rows in one hash join faster than in five.

The run is one unit of work (`checkpoint` commits it once, at the end, with the backlog and the
watermarks), so a pass stopped half-way leaves the store as it was and the next pass does the
same work again. Running it twice changes nothing: items with an active row are never
candidates again, and new ids are new only until the watermark moves.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial

from sqlalchemy import ColumnElement, Table
from sqlalchemy.orm import Session

from reconciliation.matching.accounts import match_by_account
from reconciliation.matching.backlog import active_row, in_backlog, read_frontier, settle
from reconciliation.matching.outcome import MatchTally
from reconciliation.matching.receipts import match_postings_by_receipt
from reconciliation.matching.sql import ANALYZE_AFTER_ROWS, refresh_statistics
from reconciliation.matching.status import mark_exceptions, max_match_id
from reconciliation.matching.transfers import attach_transfers, match_failures
from reconciliation.progress import Progress
from reconciliation.store.models import Posting, Transfer

postings: Table = Posting.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]

Rule = Callable[[Session, ColumnElement[bool], datetime], MatchTally]


def match_all(
    session: Session,
    *,
    window_seconds: int,
    now: datetime,
    checkpoint: Callable[[], None],
    progress: Progress,
) -> MatchTally:
    """Run every matching rule over what is new or waiting; return what was matched."""
    tally = MatchTally()
    frontier = read_frontier(session)
    first_row = max_match_id(session)

    def run(batch: MatchTally) -> None:
        """Set aside what a rule found ambiguous before the next rule looks at the items."""
        mark_exceptions(session, batch.ambiguities)
        tally.add(batch)
        if batch.rows >= ANALYZE_AFTER_ROWS:
            refresh_statistics(session, "matches")

    steps: tuple[tuple[str, Table, Rule], ...] = (
        ("posting", postings, match_postings_by_receipt),
        (
            "transfer",
            transfers,
            partial(match_failures, unseen_after=frontier.seen["notification"]),
        ),
    )
    for stream, table, rule in steps:
        lo, hi = frontier.new(stream)
        progress.phase(f"matching {stream}s", max(0, hi - lo + 1))
        run(rule(session, in_backlog(stream, table.c.id) & ~active_row(stream, table.c.id), now))
        if lo <= hi:
            run(rule(session, table.c.id.between(lo, hi), now))
            progress.advance(hi - lo + 1)
        progress.done()
        if stream == "posting":
            attached = attach_transfers(session)
            tally.attached += len(attached)
            tally.status_suspects |= attached
            tally.attached_notifications |= attached

    progress.phase("matching by account and amount", 0)
    run(match_by_account(session, frontier, window_seconds, now))
    progress.done()
    settle(session, frontier, first_row, now)
    checkpoint()
    return tally
