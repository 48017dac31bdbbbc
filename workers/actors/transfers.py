"""poll_transfers: every due, non-terminal transfer gets its status read and recorded.

Workers share the due transfers by claiming batches (reconciliation.transfers.polling: SKIP
LOCKED on PostgreSQL, a lease column on both). A message works for at most
`TIME_BUDGET_SECONDS`; what it did not reach stays due and the next tick's message (on any
worker) claims it. A failed read backs off like a non-terminal answer, so one unreachable
transfer never starves the others.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Final

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from foundation import IntervalSummary
from reconciliation.postings import holdings_named, signal_holdings
from reconciliation.store import transaction
from reconciliation.transfers import (
    Backoff,
    claim_due_transfers,
    record_poll_failure,
    record_status,
    release_claims,
    transfer_legs,
)
from upstream import ProviderError
from workers.actors.activity import send_due_activity_polls
from workers.queues import POLLING, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, NOT_RETRYABLE
from workers.runtime import Runtime, current_runtime, worker_identity

#: Transfers claimed at once (small: a claim holds them away from other workers until polled).
CLAIM_BATCH: Final = 20

#: Seconds one message keeps polling before leaving the rest to the next message.
TIME_BUDGET_SECONDS: Final = 30.0

log = structlog.get_logger(__name__)

#: The poll runs every couple of seconds: one info line a minute with its totals, the rounds at debug.
POLL_ROUNDS: Final = IntervalSummary(log, "transfers.polled")


@dataclass(slots=True)
class TransferPass:
    """What one poll_transfers message did."""

    polled: int = 0
    changed: int = 0
    terminal: int = 0
    failed: int = 0


def poll_due_transfers(
    rt: Runtime,
    *,
    backoff: Backoff | None = None,
    time_budget: float = TIME_BUDGET_SECONDS,
    batch: int = CLAIM_BATCH,
) -> TransferPass:
    """Claim, read and record due transfers until none is due or the budget is spent."""
    backoff = backoff or Backoff(
        first_seconds=rt.settings.schedules.transfer_backoff_first_seconds,
        cap_seconds=rt.settings.schedules.transfer_backoff_cap_seconds,
    )
    owner = worker_identity("transfers")
    deadline = time.monotonic() + time_budget
    result = TransferPass()
    terminal: list[uuid.UUID] = []
    while time.monotonic() < deadline:
        claims = claim_due_transfers(rt.sessions, owner, rt.clock(), batch)
        if not claims:
            break
        for index, claim in enumerate(claims):
            if time.monotonic() >= deadline:
                release_claims(rt.sessions, claims[index:], owner)
                break
            try:
                status = rt.gateway.transfer_status(claim.transfer_ref).value
            except NOT_RETRYABLE:
                release_claims(rt.sessions, claims[index:], owner)
                raise
            except ProviderError as exc:
                record_poll_failure(rt.sessions, claim, owner, rt.clock(), backoff)
                result.failed += 1
                log.warning(
                    "transfers.poll_failed",
                    transfer_ref=str(claim.transfer_ref),
                    error=type(exc).__name__,
                    detail=str(exc),
                )
                continue
            result.polled += 1
            if record_status(rt.sessions, claim, owner, status, rt.clock(), backoff):
                result.changed += 1
            if status.is_terminal:
                result.terminal += 1
                terminal.append(claim.transfer_ref)
        read_legs(rt, terminal)
        terminal.clear()
    return result


def read_legs(rt: Runtime, transfer_refs: list[uuid.UUID]) -> None:
    """Reads follow the money: a transfer that reached a terminal stage made (or undid) postings
    on both legs, so both holdings' reads are due at once, first in line."""
    if not transfer_refs:
        return
    with transaction(rt.sessions) as session:
        legs = transfer_legs(session, transfer_refs)
        ids = holdings_named(session, legs.holding_refs, legs.endpoint_refs)
        signal_holdings(session, ids, rt.clock())
    if ids:
        send_due_activity_polls(rt, sorted(ids))


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_URGENT,
    max_retries=1,
    min_backoff=5_000,
    max_backoff=MINUTE_MS,
    time_limit=2 * MINUTE_MS,
    throws=NOT_RETRYABLE,
)
def poll_transfers() -> None:
    """Poll every transfer whose next poll is due, until none is left or time is up."""
    result = poll_due_transfers(current_runtime())
    if result.polled or result.failed:
        POLL_ROUNDS.add(
            polled=result.polled,
            changed=result.changed,
            terminal=result.terminal,
            failed=result.failed,
        )
