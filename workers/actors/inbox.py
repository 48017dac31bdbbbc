"""process_delivery: inbox deliveries become notifications (reconciliation.notifications.processing).

One message carries a batch of delivery row ids (the receiver commits deliveries in groups and
hands each group over at once, up to `workers.dispatch.DELIVERY_BATCH`; the sweep re-sends lost
ones `RESEND_BATCH` at a time); the batch is processed in one transaction. Idempotent: a
delivery already processed is skipped, so a message delivered twice, or a delivery sent both by
the receiver and by the sweep, changes nothing the second time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from foundation import log_item
from reconciliation.notifications import ProcessOutcome, process_deliveries
from reconciliation.postings import ask_for_discovery, holdings_named, signal_holdings
from reconciliation.store import transaction
from upstream import reader_for
from workers.actors.activity import send_due_activity_polls
from workers.actors.holdings import discover_holdings
from workers.queues import INBOX, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, SECOND_MS
from workers.runtime import Runtime, current_runtime

log = structlog.get_logger(__name__)


def handle_deliveries(rt: Runtime, delivery_pks: Sequence[int]) -> ProcessOutcome:
    """Process the batch in one transaction and log what it did."""
    with transaction(rt.sessions) as session:
        outcome = process_deliveries(
            session, delivery_pks, rt.clock(), reader_for(rt.settings.webhooks)
        )
    if outcome.processed or outcome.quarantined:
        fields = {
            "processed": len(outcome.processed),
            "quarantined": outcome.quarantined,
            "transfers_named": len(outcome.transfers_named),
        }
        if outcome.quarantined:  # a delivery set aside is news
            log.info("inbox.processed", **fields)
        else:
            log_item(log, "inbox.processed", **fields)
    return outcome


def read_named_holdings(rt: Runtime, outcome: ProcessOutcome) -> int:
    """Reads follow the money: the holdings a batch names (by ref, or by account number alone)
    are due at once, first in line, and their reads are sent now rather than at the next tick.
    Returns how many were sent (a holding being read now is left to its reader, whose release
    sees the signal)."""
    named = (outcome.holdings_named, outcome.endpoints_named, outcome.account_numbers_named)
    if not any(named):
        return 0
    with transaction(rt.sessions) as session:
        ids = holdings_named(session, *named)
        signal_holdings(session, ids, rt.clock())
    return send_due_activity_polls(rt, sorted(ids)) if ids else 0


@dramatiq.actor(
    queue_name=INBOX,
    priority=PRIORITY_URGENT,
    max_retries=5,
    min_backoff=SECOND_MS,
    max_backoff=MINUTE_MS,
    time_limit=MINUTE_MS,
)
def process_delivery(delivery_pks: list[int]) -> None:
    """Turn the deliveries with these row ids into notifications (skipping any already done);
    ask for discovery when one names a holding the store does not have yet (at once, or
    deferred to the end of the ask interval when another ask was made within it)."""
    rt = current_runtime()
    outcome = handle_deliveries(rt, delivery_pks)
    read_named_holdings(rt, outcome)
    send_in = ask_for_discovery(
        rt.sessions, outcome.holdings_named, outcome.endpoints_named, rt.clock()
    )
    if send_in is not None:
        log.info(
            "holdings.discovery_asked",
            reason="a notification names an unknown holding",
            deferred_seconds=round(send_in, 3),
        )
        if send_in > 0:
            discover_holdings.send_with_options(delay=math.ceil(send_in * 1000))
        else:
            discover_holdings.send()
