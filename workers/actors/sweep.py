"""Ticks and the sweep: look at the store, enqueue what is due or was lost.

The scheduler only sends these small messages; the store is the truth about what is due.

- `enqueue_activity_polls`: every holding due for a poll gets a poll_activity message carrying
  its completed-reads count (a duplicate then costs no gateway request) and is marked sent.
- `sweep`: messages do get lost (Dramatiq's Redis broker recovers a dead worker's messages only
  after a heartbeat timeout and a random maintenance pass; a Redis restart without persistence
  drops them all). Deliveries still pending after the grace period are sent again, holdings
  whose poll is overdue are sent again, and watched holdings without a cursor row get one.

Lost deliveries are re-sent all at once, in id order, as fast as the broker takes them, in
messages of `workers.dispatch.RESEND_BATCH` rows (larger than the receiver's: a batch costs a
few statements whatever its size): after an outage the workers, not the sweep, set the pace of
recovery (a cap of 5,000 per 30 s sweep made a 20 s outage take ten minutes to drain). What
stops a re-sent delivery from being sent again and again while it waits in the queue is a mark
in the store: the highest id this round has re-sent
(`reconciliation.notifications.processing.ResendMark`). Later sweeps send only what is above it; a delivery at or below it that is still pending when the round is
`RESEND_ROUND_SECONDS` old was lost again, and the next round sends it once more.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from foundation import IntervalSummary
from reconciliation.notifications import (
    advance_resend_mark,
    pending_deliveries,
    read_resend_mark,
)
from reconciliation.postings import (
    ensure_cursor_rows,
    watched_without_cursor,
)
from reconciliation.store import transaction
from workers.actors.activity import send_due_activity_polls
from workers.dispatch import RESEND_BATCH, EnqueueError, send_process_delivery
from workers.queues import PRIORITY_URGENT, TICKS
from workers.retry_policy import MINUTE_MS
from workers.runtime import Runtime, current_runtime

#: Deliveries read and sent per round trip of a sweep: a chunk's ids are a few hundred kB in
#: memory and its 40 messages (`RESEND_BATCH` rows each) go to Redis in well under a second; a
#: sweep goes on chunk after chunk until nothing is left or its time is up.
SWEEP_DELIVERY_CHUNK: Final = 20_000

#: How long a sweep may spend re-sending before it leaves the rest to the next one: half of its
#: actor's time limit, so the holdings' polls after it still run.
SWEEP_RESEND_SECONDS: Final = 30.0

#: Age of a re-send round after which deliveries it sent that are still pending are sent again.
#: Well above the time two workers take over a 100,000-row round (15 s on the bench machine,
#: a minute under heavy load), so a slow drain is sent again at most once more per round;
#: short: a message lost twice waits two minutes.
RESEND_ROUND_SECONDS: Final = 120.0

log = structlog.get_logger(__name__)

#: The activity tick runs every few seconds: one info line a minute with its totals.
POLL_TICKS: Final = IntervalSummary(log, "activity.polls_sent")


@dataclass(slots=True)
class SweepPass:
    """What one sweep re-sent."""

    deliveries: int = 0
    holdings: int = 0
    cursors_created: int = 0


def sweep_store(rt: Runtime) -> SweepPass:
    """Re-send pending deliveries past the grace period and overdue holdings."""
    result = SweepPass()
    now = rt.clock()
    with transaction(rt.sessions) as session:
        missing = watched_without_cursor(session)
        ensure_cursor_rows(session, missing, now)
        result.cursors_created = len(missing)
    result.deliveries = resend_lost_deliveries(rt, now)
    result.holdings = send_due_activity_polls(rt)
    return result


def resend_lost_deliveries(rt: Runtime, now: datetime) -> int:
    """Send every delivery still pending after the grace period, once per round; return how many.

    The mark moves only after the broker took a chunk, so a chunk the broker refused (Redis
    down) is sent by the next sweep. Two sweeps at once (a tick delivered twice) may both send
    a chunk: the inbox actor skips a delivery already processed, so that costs a little work,
    once.
    """
    cutoff = now - timedelta(seconds=rt.settings.schedules.delivery_grace_seconds)
    round_age = timedelta(seconds=RESEND_ROUND_SECONDS)
    deadline = time.monotonic() + SWEEP_RESEND_SECONDS
    sent = 0
    while time.monotonic() < deadline:
        with transaction(rt.sessions) as session:
            mark = read_resend_mark(session, now, round_age)
            stale = pending_deliveries(session, cutoff, SWEEP_DELIVERY_CHUNK, after_id=mark.through)
        if not stale:
            break
        try:
            send_process_delivery(stale, batch=RESEND_BATCH)
        except EnqueueError as exc:
            log.info("sweep.resend_refused", deliveries=len(stale), error=str(exc))
            break
        with transaction(rt.sessions) as session:
            advance_resend_mark(session, mark, max(stale), now)
        sent += len(stale)
        if len(stale) < SWEEP_DELIVERY_CHUNK:
            break
    return sent


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
        POLL_TICKS.add(holdings=sent)


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
