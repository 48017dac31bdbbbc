"""Ticks and the sweep: look at the store, enqueue what is due or was lost.

The scheduler only sends these small messages; the store is the truth about what is due.

- `enqueue_activity_polls`: every holding due for a poll gets a poll_activity message carrying
  its completed-reads count (a duplicate then costs no gateway request) and is marked sent.
- `sweep`: messages do get lost (Dramatiq's Redis broker recovers a dead worker's messages only
  after a heartbeat timeout and a random maintenance pass; a Redis restart without persistence
  drops them all). Deliveries still pending after the grace period are sent again, holdings
  whose poll is overdue are sent again, and watched holdings without a cursor row get one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Final

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from reconciliation.notifications.processing import pending_deliveries
from reconciliation.postings.activity import (
    claim_due_holdings,
    ensure_cursor_rows,
    watched_without_cursor,
)
from reconciliation.store.db import transaction
from workers.actors.activity import poll_activity, redo_after
from workers.dispatch import enqueue_process_delivery
from workers.queues import PRIORITY_URGENT, TICKS
from workers.retry_policy import MINUTE_MS
from workers.runtime import Runtime, current_runtime

#: Most deliveries one sweep re-sends (the rest wait for the next sweep).
SWEEP_DELIVERY_LIMIT: Final = 5_000

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class SweepPass:
    """What one sweep re-sent."""

    deliveries: int = 0
    holdings: int = 0
    cursors_created: int = 0


def send_due_activity_polls(rt: Runtime) -> int:
    """Send poll_activity for every due holding; returns how many were sent."""
    with transaction(rt.sessions) as session:
        due = claim_due_holdings(session, rt.clock(), redo_after(rt.settings))
    for holding in due:
        poll_activity.send(holding.holding_id, holding.reads_completed)
    return len(due)


def sweep_store(rt: Runtime) -> SweepPass:
    """Re-send pending deliveries past the grace period and overdue holdings."""
    result = SweepPass()
    now = rt.clock()
    grace = timedelta(seconds=rt.settings.schedules.delivery_grace_seconds)
    with transaction(rt.sessions) as session:
        missing = watched_without_cursor(session)
        ensure_cursor_rows(session, missing, now)
        result.cursors_created = len(missing)
        stale = pending_deliveries(session, now - grace, SWEEP_DELIVERY_LIMIT)
    if stale:
        enqueue_process_delivery(stale)
        result.deliveries = len(stale)
    result.holdings = send_due_activity_polls(rt)
    return result


@dramatiq.actor(
    queue_name=TICKS,
    priority=PRIORITY_URGENT,
    max_retries=0,
    time_limit=MINUTE_MS,
)
def enqueue_activity_polls() -> None:
    """Tick: send a poll for every holding that is due."""
    sent = send_due_activity_polls(current_runtime())
    if sent:
        log.info("activity.polls_sent", holdings=sent)


@dramatiq.actor(
    queue_name=TICKS,
    priority=PRIORITY_URGENT,
    max_retries=0,
    time_limit=MINUTE_MS,
)
def sweep() -> None:
    """Re-send what lost messages left undone."""
    result = sweep_store(current_runtime())
    if result.deliveries or result.holdings or result.cursors_created:
        log.info(
            "sweep.resent",
            deliveries=result.deliveries,
            holdings=result.holdings,
            cursors_created=result.cursors_created,
        )
