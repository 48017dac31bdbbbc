"""reconcile: one reconciliation pass (matching, drift rules, alerts), on a worker.

The pass itself is reconciliation.reconcile.run_pass; it takes its own lease, so two ticks
landing on two workers at once run it once.
"""

from __future__ import annotations

import dramatiq

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from workers.queues import POLLING, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, SECOND_MS
from workers.runtime import current_runtime


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_URGENT,
    max_retries=1,
    min_backoff=5 * SECOND_MS,
    max_backoff=MINUTE_MS,
    time_limit=15 * MINUTE_MS,
)
def reconcile() -> None:
    """Run a reconciliation pass over what is new since the last one."""
    from reconciliation import run_pass

    rt = current_runtime()
    run_pass(rt.sessions, rt.settings)
