"""discover_holdings: list the endpoint register to the end, store holdings and locators.

The list is followed page by page (`afterEndpointRef`) until a short page. An endpoint is read
(for its holding ref and locators, which list rows do not carry) only when it is new or its
locator count changed (reconciliation.postings.holdings). New holdings are watched at once: they
are due now as catch-up reads, and the first slice the gateway budget serves is sent right
away; the ticks send the rest, after any signalled read (a thousand new holdings queued at once
would put a webhook's holding behind all of them). The first ledger audit follows their first
reads (workers.actors.activity), not a day later. Endpoints are read `READERS` at a time (the
shared rate limiter still paces them): one round trip after another, a register of 100,000 new
endpoints took hours (bench/fleet.py); each is stored in its own transaction, in register order.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any, Final

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from reconciliation.postings import (
    ReadBudget,
    known_endpoints,
    needs_read,
    store_endpoint,
    stored_ceiling_shortfall,
)
from reconciliation.store import transaction
from upstream import EndpointRow, NotFound
from workers.actors.activity import send_due_activity_polls
from workers.queues import POLLING, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, NOT_RETRYABLE, SECOND_MS
from workers.runtime import Runtime, current_runtime

log = structlog.get_logger(__name__)

#: Endpoint reads one discovery pass keeps in flight, and register rows handed to them at once.
READERS: Final = 8
BATCH: Final = 200


@dataclass(slots=True)
class DiscoveryPass:
    """What one discovery pass did."""

    listed: int = 0
    read: int = 0
    new_holdings: list[int] = field(default_factory=list)


def discover(rt: Runtime) -> DiscoveryPass:
    """Follow the register to its end; store what is new or changed."""
    result = DiscoveryPass()
    with transaction(rt.sessions) as session:
        known = known_endpoints(session)
    with ThreadPoolExecutor(READERS, thread_name_prefix="discovery") as pool:
        to_read = _to_read(rt, known, result)
        while rows := list(islice(to_read, BATCH)):
            for row, answer in zip(rows, pool.map(partial(_read, rt), rows), strict=True):
                if answer is None:
                    continue
                result.read += 1
                if not answer.found or answer.endpoint is None:
                    continue
                with transaction(rt.sessions) as session:
                    stored = store_endpoint(session, answer.endpoint, rt.clock())
                if stored is None:
                    log.warning("holdings.no_holding_ref", endpoint_ref=str(row.endpoint_ref))
                    continue
                known[row.endpoint_ref] = len(answer.endpoint.locators)
                if stored.is_new:
                    result.new_holdings.append(stored.holding_id)
    return result


def _to_read(
    rt: Runtime, known: dict[uuid.UUID, int], result: DiscoveryPass
) -> Iterator[EndpointRow]:
    """The register's rows that need a read (new, or their locator count changed)."""
    for row in rt.gateway.iter_programmable_endpoints():
        result.listed += 1
        if needs_read(row, known):
            yield row


def _read(rt: Runtime, row: EndpointRow) -> Any:
    """The endpoint's answer (an EndpointRead, a type upstream keeps behind its surface), or
    None when it is gone since it was listed."""
    try:
        return rt.gateway.get_programmable_endpoint(row.endpoint_ref).value
    except NotFound:
        return None


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_URGENT,
    max_retries=2,
    min_backoff=5 * SECOND_MS,
    max_backoff=MINUTE_MS,
    time_limit=15 * MINUTE_MS,
    throws=NOT_RETRYABLE,
)
def discover_holdings() -> None:
    """Store new holdings and locators, and start reading the new holdings' postings."""
    rt = current_runtime()
    result = discover(rt)
    # Their first read (after_reads 0, their completed reads when claimed) sends the first
    # audit once it is done (workers.actors.activity): not now, while their ledgers are read.
    if result.new_holdings:
        send_due_activity_polls(rt)
    log.info(
        "holdings.discovered",
        listed=result.listed,
        read=result.read,
        new=len(result.new_holdings),
    )
    warn_if_ceiling_unheld(rt)


def warn_if_ceiling_unheld(rt: Runtime) -> None:
    """Say so when the gateway budget cannot hold the staleness ceiling for the holdings now
    known: discovery runs at start and whenever holdings may have been added."""
    budget = ReadBudget(
        rt.settings.provider.gateway_requests_per_second,
        rt.settings.schedules.max_staleness_seconds,
    )
    with rt.sessions() as session:
        shortfall = stored_ceiling_shortfall(session, budget)
    if shortfall is not None:
        log.warning(
            "capacity.ceiling_unheld",
            detail=shortfall.sentence(),
            holdings=shortfall.holdings,
            needed_per_second=round(shortfall.needed_per_second, 1),
            ceiling_that_holds=shortfall.ceiling_that_holds,
            budget_that_holds=shortfall.budget_that_holds,
        )
