"""snapshot_balances: the current balance of watched holdings, stored with its time.

A snapshot follows the money: a read that stored a holding's postings sends one for its
endpoint at once (it is what the balance check judges those postings against), and the
scheduled tick reads only the endpoints whose snapshot is due (such a follow-up lost, or a
silent holding at the staleness ceiling), a budget's slice at a time from an index.

One read per endpoint (it answers for all its holdings), one row per watched holding. An
endpoint whose read fails is skipped this time and logged; the next tick reads it again. Only
credentials or capability problems end the message (they would fail every endpoint alike).
A failure waiting will not fix (an answer recon cannot read, a balance the store refuses)
also opens a `balance_snapshot_failed` alert for exactly the holdings it hit, resolved when
their snapshot is stored again; every other endpoint and holding is snapshotted meanwhile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from reconciliation.postings import (
    SILENT_SHARE,
    claim_due_endpoints,
    clear_snapshot_failures,
    endpoints_to_read,
    note_snapshot_failures,
    schedule_next_snapshots,
    store_snapshot,
)
from reconciliation.store import transaction
from upstream import ProtocolError, ProviderError
from workers.queues import POLLING, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, NOT_RETRYABLE, SECOND_MS
from workers.runtime import Runtime, current_runtime

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class SnapshotPass:
    """What one snapshot pass did."""

    endpoints: int = 0
    snapshots: int = 0
    failed: int = 0
    #: Holdings whose balance the store refused (each has its alert).
    refused: int = 0


def snapshots_per_tick(rt: Runtime) -> int:
    """Endpoints one scheduled tick may read: at most the share of the gateway rate in use
    (lowered after a 429) until the next tick that silent activity reads may take too
    (reconciliation.postings.SILENT_SHARE). A cap on what is sent, not a reservation: the
    shared limiter paces them."""
    seconds = rt.settings.schedules.snapshot_balances_seconds
    budget = rt.gateway_transport.limiter.requests_within(seconds) * SILENT_SHARE
    return max(1, math.ceil(budget))


def snapshot_watched(
    rt: Runtime, *, due_only: bool = False, holding_id: int | None = None
) -> SnapshotPass:
    """Read and store a snapshot for every endpoint with watched holdings; with `due_only`,
    only for the endpoints whose snapshot is due (after a read that stored postings, or at
    the staleness ceiling), as many as the budget allows; with `holding_id`, that holding's
    endpoint if its snapshot is due."""
    result = SnapshotPass()
    settings = rt.settings
    redo = timedelta(seconds=settings.schedules.snapshot_balances_seconds)
    ceiling = timedelta(seconds=settings.schedules.max_staleness_seconds)
    with transaction(rt.sessions) as session:
        if due_only or holding_id is not None:
            limit = snapshots_per_tick(rt)
            targets = claim_due_endpoints(session, rt.clock(), redo, limit, holding_id)
        else:
            targets = endpoints_to_read(session)
    for target in targets:
        result.endpoints += 1
        try:
            answer = rt.gateway.balance(target.account_ref, target.endpoint_ref)
        except NOT_RETRYABLE:
            raise
        except ProviderError as exc:
            result.failed += 1
            log.warning(
                "balances.read_failed",
                endpoint_ref=str(target.endpoint_ref),
                error=type(exc).__name__,
                detail=str(exc),
            )
            if isinstance(exc, ProtocolError):  # the same answer comes back next time
                reason = f"its endpoint's balance cannot be read: {exc}"
                with transaction(rt.sessions) as session:
                    note_snapshot_failures(
                        session, dict.fromkeys(target.holding_ids, reason), rt.clock()
                    )
            continue
        observed_at = rt.clock()
        with transaction(rt.sessions) as session:
            outcome = store_snapshot(session, target, answer.value, observed_at)
            schedule_next_snapshots(
                session, target.holding_ids.values(), observed_at, observed_at + ceiling
            )
            note_snapshot_failures(session, outcome.refused, observed_at)
            clear_snapshot_failures(
                session,
                [
                    h
                    for h in target.holding_ids
                    if h not in outcome.refused and target.holding_ids[h] in outcome.stored
                ],
            )
        result.snapshots += len(outcome.stored)
        result.refused += len(outcome.refused)
        for holding_ref, reason in outcome.refused.items():
            log.warning("balances.refused", holding_ref=str(holding_ref), reason=reason)
    return result


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_URGENT,
    max_retries=1,
    min_backoff=5 * SECOND_MS,
    max_backoff=MINUTE_MS,
    time_limit=10 * MINUTE_MS,
    throws=NOT_RETRYABLE,
)
def snapshot_balances(holding_id: int | None = None, every_holding: bool = False) -> None:
    """Store the current balance of the watched holdings whose snapshot is due (the tick), of
    one holding's endpoint after a read stored its postings, or of every watched holding."""
    result = snapshot_watched(current_runtime(), due_only=not every_holding, holding_id=holding_id)
    if holding_id is not None:
        return  # one endpoint after a read: the read's own line says enough
    log.info(
        "balances.snapshotted",
        endpoints=result.endpoints,
        snapshots=result.snapshots,
        failed=result.failed,
        refused=result.refused,
    )
