"""poll_activity: read one holding's committed postings into the store, page by page.

The reader takes the holding's lease (reconciliation.postings.activity), resumes from the stored
position exactly as it was left, and commits each page with the position that follows it
(invariant 3). How pages are asked for and what they mean is `upstream.activity_walk`: the
provider's sort directions, page cap and last-page cursor are not shown in its spec, so the
reader reads `oldest_first` where the provider has served it (one cursor for the life of a
holding, new postings always after it) and otherwise walks `newest_first` from the top down to
the holding's high-water, and a capped page is told from the last one without waiting for the
next poll. What a read finds out about the provider is stored with its pages, for every worker.

A long catch-up is cut into messages of at most `PAGE_BUDGET` pages or `TIME_BUDGET_SECONDS`:
each message ends by sending the next, so a thousand holdings share the workers fairly, no
message nears its time limit, and a stopped worker loses at most one page of work (which the
next reader re-reads from the stored position and the unique key makes harmless).

Gateway faults that waiting may fix (5xx, 429, timeouts, unreadable answers) are recorded on
the cursor row (`consecutive_errors`, `last_error`, which the reconciler watches) and the holding
is made due again shortly; the upstream client has already retried within its own deadline.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from foundation import Settings, log_item
from reconciliation.ledger_audit import claim_first_audit
from reconciliation.postings import (
    LEASE_SECONDS,
    PRIORITY_CATCH_UP,
    PRIORITY_SIGNALLED,
    PRIORITY_SILENT,
    SILENT_SHARE,
    LeasedHolding,
    LeaseLostError,
    StoredTerms,
    acquire_lease,
    claim_due_holdings,
    quiet_interval,
    release_lease,
    store_page,
)
from reconciliation.store import transaction
from upstream import ActivityCursor, ActivityPage, ActivityReader, PagingTerms, ProviderError
from workers.actors.audit import audit_ledger
from workers.actors.balances import snapshot_balances
from workers.lease_keeper import LeaseKeeper
from workers.middleware.metrics import PAGE_WRITE_SECONDS, POSTINGS_STORED
from workers.queues import INBOX, POLLING, PRIORITY_BULK, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, NOT_RETRYABLE, SECOND_MS
from workers.runtime import Runtime, current_runtime, worker_identity
from workers.stop_signal import stopping
from workers.tick_intervals import activity_tick_seconds

#: Pages and seconds one message reads before handing the rest of a catch-up to the next.
PAGE_BUDGET: Final = 100
TIME_BUDGET_SECONDS: Final = 20.0

#: How soon a holding whose read failed on a gateway fault is due again (at most the interval).
ERROR_RETRY_SECONDS: Final = 5.0

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class ActivityRead:
    """What one poll_activity message did."""

    holding_id: int
    pages: int = 0
    postings: int = 0
    #: Whether the read moved the holding's position: it found postings the store lacked (a
    #: newest-first walk re-reads the ties at its high-water, which are not news).
    advanced: bool = False
    caught_up: bool = False
    continues: bool = False
    skipped: bool = False
    lease_lost: bool = False
    stopped: bool = False
    #: A signal came while the read ran: the holding is due again at once, and this worker
    #: sends that read itself (a busy holding would otherwise wait for the next tick).
    signalled_again: bool = False
    error: str | None = None


def redo_after(settings: Settings) -> timedelta:
    """How long a sent poll may wait in the queue before the holding counts as due again.

    Long enough that a queued message normally runs first (a duplicate would be skipped
    anyway, at the cost of a queue slot), short enough that a lost one is replaced soon.
    """
    return timedelta(
        seconds=2 * max(settings.schedules.poll_activity_seconds, settings.schedules.sweep_seconds)
    )


def read_activity(
    rt: Runtime,
    holding_id: int,
    after_reads: int | None = None,
    *,
    page_budget: int = PAGE_BUDGET,
    time_budget: float = TIME_BUDGET_SECONDS,
) -> ActivityRead:
    """Read the holding from its stored position: to the end, or until the budget is spent."""
    settings = rt.settings
    lease_seconds = rt.lease_seconds or LEASE_SECONDS
    owner = worker_identity("activity")
    result = ActivityRead(holding_id)
    lease = acquire_lease(
        rt.sessions, holding_id, owner, rt.clock(), lease_seconds, after_reads=after_reads
    )
    if lease is None:
        result.skipped = True
        return result
    configured = settings.provider.activity_page_size
    terms = paging_terms(lease.terms, configured)
    gateway = rt.gateway

    def fetch(cursor: ActivityCursor | None, size: int, direction: str) -> ActivityPage:
        return gateway.activity_page(
            lease.address, cursor, page_size=size, sort_direction=direction
        )

    reader = ActivityReader(fetch, lease.position, terms)
    # Every posting made before this moment is in the pages this read asks for from now on,
    # unless they continue a newest-first walk begun by an earlier read: that walk's listing
    # began then, and it holds nothing made since (the next walk does). So the moment a read
    # caught up to is taken here, not when it ends: a balance observed while the pages were
    # being read is judged only once a read that began after it has caught up.
    began_at = rt.clock()
    listed_from = None if lease.position.walk_top is not None else began_at
    deadline = time.monotonic() + time_budget
    try:
        # One connection for the whole read: each page's transaction then costs no pool
        # checkout and no liveness ping (a dead connection fails the page, as it would anyway).
        # The keeper renews the (short) lease while a slow page is being fetched.
        with (
            LeaseKeeper(rt.sessions, lease, lease_seconds, rt.clock),
            rt.engine.connect() as connection,
            rt.sessions(bind=connection) as session,
        ):
            while True:
                step = reader.read_page()
                learned = reader.terms
                with PAGE_WRITE_SECONDS.time():
                    store_page(
                        session,
                        lease,
                        step.page.entries,
                        step.position,
                        rt.clock(),
                        lease_seconds,
                        page_size=learned.page_size if learned.page_size < configured else None,
                        oldest_first=learned.oldest_first,
                    )
                if step.page.entries and step.position != lease.position:
                    result.advanced = True
                POSTINGS_STORED.inc(len(step.page.entries))
                result.pages += 1
                result.postings += len(step.page.entries)
                if step.done:
                    result.caught_up = True
                    break
                if result.pages >= page_budget or time.monotonic() >= deadline:
                    break
                if stopping():
                    # Give the holding back now; the next message (or worker) goes on from
                    # the page just stored.
                    result.stopped = True
                    break
    except LeaseLostError:
        result.lease_lost = True
        return result
    except ProviderError as exc:
        result.error = str(exc)
        retry_in = min(ERROR_RETRY_SECONDS, settings.schedules.poll_activity_seconds)
        release_lease(
            rt.sessions,
            lease,
            rt.clock() + timedelta(seconds=retry_in),
            error=f"{type(exc).__name__}: {exc}",
            priority=PRIORITY_CATCH_UP,
            began_at=began_at,
        )
        if isinstance(exc, NOT_RETRYABLE):
            raise
        return result
    except BaseException as exc:
        _release_after_crash(rt, lease, exc)
        raise
    now = rt.clock()
    if result.caught_up:
        # The silent schedule: soon again after postings, backing off while none come; a
        # balance snapshot follows a read that stored postings (it is judged against them).
        quiet = 0 if result.advanced else lease.quiet_reads + 1
        schedules = settings.schedules
        wait = quiet_interval(
            quiet, schedules.poll_activity_seconds, schedules.max_staleness_seconds
        )
        result.signalled_again = release_lease(
            rt.sessions,
            lease,
            now + timedelta(seconds=wait),
            caught_up_at=listed_from,
            completed=True,
            priority=PRIORITY_SILENT,
            began_at=began_at,
            quiet_reads=quiet,
            balance_due_at=now if result.advanced else None,
        )
    elif result.stopped:
        # Due at once, for whichever worker is left.
        release_lease(rt.sessions, lease, now, priority=PRIORITY_CATCH_UP)
        result.continues = True
    else:
        release_lease(rt.sessions, lease, now + redo_after(settings), priority=PRIORITY_CATCH_UP)
        result.continues = True
    return result


def paging_terms(found: StoredTerms, configured_page_size: int) -> PagingTerms:
    """What the reader starts from: the configured page size unless the provider refused it."""
    size = configured_page_size
    if found.page_size is not None:
        size = min(size, found.page_size)
    return PagingTerms(
        page_size=size,
        largest_served=found.largest_page or 0,
        oldest_first=found.oldest_first,
    )


def _first_audit_when_every_holding_is_read(rt: Runtime) -> None:
    """After a newly discovered holding's first read (discovery sends it with after_reads 0):
    the store's first ledger audit, sent by the read that completes the set (and by it alone).
    Asked only on first reads, so the routine reads of every holding cost no query for it."""
    if claim_first_audit(rt.sessions, rt.settings.schedules.audit_seconds, rt.clock()):
        audit_ledger.send()


def _release_after_crash(rt: Runtime, lease: LeasedHolding, exc: BaseException) -> None:
    """Best effort: free the lease at once; if the store is down too, it expires by itself."""
    try:
        release_lease(rt.sessions, lease, None, error=f"{type(exc).__name__}: {exc}")
    except Exception as release_error:  # noqa: BLE001 - the original error is what matters
        log.warning("activity.release_failed", error=type(release_error).__name__)


def reads_per_tick(rt: Runtime) -> int:
    """How many activity reads one tick may send: what the gateway rate in use (lowered after
    a 429, workers.gateway_rate) serves until the next tick (a caught-up read is one request).
    More would only queue silent reads in front of the next tick's signalled ones."""
    budget = rt.gateway_transport.limiter.requests_within(activity_tick_seconds(rt.settings))
    return max(1, math.ceil(budget))


def send_due_activity_polls(rt: Runtime, holding_ids: Sequence[int] | None = None) -> int:
    """Send poll_activity for the due holdings the budget allows, highest priority first
    (only among `holding_ids` when given); returns how many were sent."""
    limit = reads_per_tick(rt)
    with transaction(rt.sessions) as session:
        due = claim_due_holdings(
            session,
            rt.clock(),
            redo_after(rt.settings),
            limit,
            silent_limit=max(1, math.floor(limit * SILENT_SHARE)),
            holding_ids=holding_ids,
        )
    for holding in due:
        read = poll_signalled_activity if holding.priority == PRIORITY_SIGNALLED else poll_activity
        read.send(holding.holding_id, holding.reads_completed)
    return len(due)


#: A read's retries and time limit, whichever queue it came by: a gateway fault retries soon
#: (the read resumes from its stored position); a refusal that no retry can change does not.
READ_OPTIONS: Final[dict[str, Any]] = {
    "max_retries": 2,
    "min_backoff": 2 * SECOND_MS,
    "max_backoff": 30 * SECOND_MS,
    "time_limit": 5 * MINUTE_MS,
    "throws": NOT_RETRYABLE,
}


@dramatiq.actor(queue_name=POLLING, priority=PRIORITY_BULK, **READ_OPTIONS)
def poll_activity(holding_id: int, after_reads: int | None = None) -> None:
    """Read a holding's new postings; send the next message if the catch-up is not done."""
    _poll(holding_id, after_reads)


@dramatiq.actor(queue_name=INBOX, priority=PRIORITY_URGENT, **READ_OPTIONS)
def poll_signalled_activity(holding_id: int, after_reads: int | None = None) -> None:
    """poll_activity for a holding a signal made due: on the inbox's queue, first in a worker's
    line, so it is not queued behind the silent reads a tick sent to the polling queue."""
    _poll(holding_id, after_reads)


def _poll(holding_id: int, after_reads: int | None) -> None:
    rt = current_runtime()
    result = read_activity(rt, holding_id, after_reads)
    if result.continues:
        poll_activity.send(holding_id, after_reads)
    if result.caught_up and after_reads == 0:
        _first_audit_when_every_holding_is_read(rt)
    if result.caught_up and result.advanced:
        snapshot_balances.send(holding_id)  # the balance follows the postings just stored
    if result.signalled_again:
        send_due_activity_polls(rt, [holding_id])
    if result.pages or result.error or result.lease_lost:
        fields = {
            "holding_id": holding_id,
            "pages": result.pages,
            "postings": result.postings,
            "caught_up": result.caught_up,
            "continues": result.continues,
            "lease_lost": result.lease_lost,
            "error": result.error,
        }
        if result.error or result.lease_lost:
            log.info("activity.read", **fields)
        else:  # a routine read of one holding: a per-item line
            log_item(log, "activity.read", **fields)
