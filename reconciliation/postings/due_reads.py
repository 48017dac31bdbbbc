"""Which holdings' reads are due, and in what order: the money decides, not the round.

The gateway has no event feed; progress is seen only by reading, under one request budget. So
reads follow the signals that money moved (invariant: reads follow the money; no signal is
dropped, only coalesced or deferred; cost grows with activity, not with holdings):

- **Signalled** (`PRIORITY_SIGNALLED`): a notification naming a holding (by ref, or by account
  number alone), or a transfer recon created or was told of reaching a terminal stage, makes the
  holding's read due at once. Many signals for one holding coalesce: they set the same due time,
  and a read message carries the holding's completed-reads count, so a second message after a
  completed read costs no request. A signal that arrives while a read is running is kept on the
  row (`signalled_at`): the read's release leaves the holding due again at once.
- **Catch-up** (`PRIORITY_CATCH_UP`): a new holding, a read cut short by its budget, a read
  that failed on a gateway fault.
- **Silent** (`PRIORITY_SILENT`): everything else, read on a schedule of its own history: a
  holding whose last read stored postings is read again after RECON_POLL_ACTIVITY_SECONDS,
  each read in a row that finds nothing doubles the wait, up to the staleness ceiling
  (RECON_MAX_STALENESS_SECONDS): no holding goes unread longer, so a posting nobody notified
  (a dropped webhook) is found within it.

Each tick takes a slice of due holdings from the index (due_priority, next_poll_at), highest
priority first, no bigger than the gateway rate in use (lowered after a 429) serves before the
next tick (workers.actors.activity.reads_per_tick): nothing looks at every holding, and the
queue never holds more silent reads than the budget drains, so a signalled read never waits
behind a round.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from reconciliation.store.in_lists import chunks
from reconciliation.store.models import ActivityCursor, Holding, Locator

#: Why a holding is due, in the order reads are chosen (lower first).
PRIORITY_SIGNALLED: Final = 0
PRIORITY_CATCH_UP: Final = 1
PRIORITY_SILENT: Final = 2
PRIORITIES: Final = (PRIORITY_SIGNALLED, PRIORITY_CATCH_UP, PRIORITY_SILENT)

#: Share of a tick's budget silent reads may take: the rest is left for transfer status reads
#: and balance snapshots, which share the gateway budget and come before a silent sweep.
SILENT_SHARE: Final = 0.75

#: Doublings of the wait after which a quiet holding sits at the ceiling (2**20 base waits is
#: far past any ceiling; the cap keeps the power a small number).
MAX_DOUBLINGS: Final = 20


def quiet_interval(quiet_reads: int, base_seconds: float, ceiling_seconds: float) -> float:
    """Seconds until a silent holding's next read: the base after a read that found postings,
    doubled for each read in a row that found none, never past the ceiling (nor below the base).
    """
    ceiling = max(ceiling_seconds, base_seconds)
    return float(min(ceiling, base_seconds * 2 ** min(quiet_reads, MAX_DOUBLINGS)))


def holdings_named(
    session: Session,
    holding_refs: Collection[uuid.UUID] = (),
    endpoint_refs: Collection[uuid.UUID] = (),
    account_numbers: Collection[str] = (),
) -> set[int]:
    """The stored holdings these refs name (an endpoint names each of its holdings), and those
    a locator with one of these bank account numbers addresses (every one: a read made due
    twice costs a read, a read never made due is a signal dropped)."""
    found: set[int] = set()
    for names, holding, column in (
        (holding_refs, Holding.id, Holding.holding_ref),
        (endpoint_refs, Holding.id, Holding.endpoint_ref),
        (account_numbers, Locator.holding_id, Locator.account_number),
    ):
        for batch in chunks(sorted(set(names), key=str)):
            found.update(session.scalars(select(holding).where(column.in_(batch))))
    return found


def signal_holdings(session: Session, holding_ids: Collection[int], now: datetime) -> None:
    """Make these holdings' reads due now, first in line; kept as `signalled_at` for a read
    already running (its release leaves the holding due again). The balance follows the read.
    """
    for batch in chunks(sorted(set(holding_ids))):
        session.execute(
            update(ActivityCursor)
            .where(ActivityCursor.holding_id.in_(batch))
            .values(signalled_at=now, next_poll_at=now, due_priority=PRIORITY_SIGNALLED)
        )


@dataclass(frozen=True, slots=True)
class DueHolding:
    """A holding to poll, and its completed reads when the poll was asked for."""

    holding_id: int
    reads_completed: int
    priority: int = PRIORITY_SILENT


def claim_due_holdings(
    session: Session,
    now: datetime,
    redo_after: timedelta,
    limit: int = 10_000,
    *,
    silent_limit: int | None = None,
    holding_ids: Sequence[int] | None = None,
) -> list[DueHolding]:
    """Up to `limit` due holdings, highest priority first, marked as sent.

    Each priority is one range of the (due_priority, next_poll_at) index, oldest due first;
    silent holdings get at most `silent_limit` of what is left. Their due time moves to
    `now + redo_after`: if the message is lost, the holding becomes due again then and a later
    tick sends it again (a poll that runs moves it itself). `holding_ids` restricts the claim
    to those holdings (the inbox claims the holdings its batch just signalled).
    """
    found: list[DueHolding] = []
    for priority in PRIORITIES:
        room = limit - len(found)
        if priority == PRIORITY_SILENT and silent_limit is not None:
            room = min(room, silent_limit)
        if room <= 0:
            continue
        query = (
            select(ActivityCursor.holding_id, ActivityCursor.reads_completed)
            .join(Holding, Holding.id == ActivityCursor.holding_id)
            .where(
                ActivityCursor.due_priority == priority,
                ActivityCursor.next_poll_at <= now,
                or_(ActivityCursor.lease_owner.is_(None), ActivityCursor.lease_expires_at < now),
                Holding.watched.is_(True),
            )
            .order_by(ActivityCursor.next_poll_at, ActivityCursor.holding_id)
            .limit(room)
        )
        if holding_ids is not None:
            query = query.where(ActivityCursor.holding_id.in_(list(holding_ids)))
        found.extend(
            DueHolding(row.holding_id, row.reads_completed, priority)
            for row in session.execute(query)
        )
    for batch in chunks([d.holding_id for d in found]):
        session.execute(
            update(ActivityCursor)
            .where(ActivityCursor.holding_id.in_(batch), ActivityCursor.next_poll_at <= now)
            .values(next_poll_at=now + redo_after)
        )
    return found
