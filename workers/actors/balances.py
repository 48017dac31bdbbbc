"""snapshot_balances: the current balance of every watched holding, stored with its time.

One read per endpoint (it answers for all its holdings), one row per watched holding. An
endpoint whose read fails is skipped this time and logged; the next tick reads it again. Only
credentials or capability problems end the message (they would fail every endpoint alike).
"""

from __future__ import annotations

from dataclasses import dataclass

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from reconciliation.postings.balances import endpoints_to_read, store_snapshot
from reconciliation.store.db import transaction
from upstream.errors import ProviderError
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


def snapshot_watched(rt: Runtime) -> SnapshotPass:
    """Read and store a snapshot for every endpoint with watched holdings."""
    result = SnapshotPass()
    with transaction(rt.sessions) as session:
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
            continue
        observed_at = rt.clock()
        with transaction(rt.sessions) as session:
            result.snapshots += len(store_snapshot(session, target, answer.value, observed_at))
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
def snapshot_balances() -> None:
    """Store the current balance of every watched holding."""
    result = snapshot_watched(current_runtime())
    log.info(
        "balances.snapshotted",
        endpoints=result.endpoints,
        snapshots=result.snapshots,
        failed=result.failed,
    )
