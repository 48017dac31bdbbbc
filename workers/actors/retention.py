"""prune: remove what is past its retention, on a worker, in small committed batches.

The run itself is reconciliation.retention.runner.run_retention; running it twice (a message
delivered again) removes nothing more, since every batch chooses only rows still past their age.
"""

from __future__ import annotations

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from workers.queues import POLLING, PRIORITY_BULK
from workers.retry_policy import MINUTE_MS, SECOND_MS
from workers.runtime import current_runtime

log = structlog.get_logger(__name__)


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_BULK,
    max_retries=1,
    min_backoff=30 * SECOND_MS,
    max_backoff=5 * MINUTE_MS,
    time_limit=30 * MINUTE_MS,
)
def prune() -> None:
    """Prune every kind of record past its configured age (RECON_RETAIN_*); one log line."""
    from reconciliation.retention import run_retention

    rt = current_runtime()
    result = run_retention(
        rt.sessions,
        rt.settings.retention,
        match_window_seconds=rt.settings.matching.match_window_seconds,
        projection_grace_seconds=rt.settings.matching.projection_grace_seconds,
        now=rt.clock(),
        archive_dir=rt.settings.retention.archive_dir,
        hold_pass=True,
    )
    log.info("retention.pruned", **result.as_dict())
