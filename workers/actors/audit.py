"""audit_ledger: the scheduled audit of every holding's postings against the gateway.

The audit itself is `reconciliation.ledger_audit.run.audit_ledger`; this actor hands it the
runtime's gateway client, whose transport takes every request from the shared rate limiter
(`workers.gateway_rate_limit`), so the audit and the pollers together stay under
RECON_GATEWAY_RPS. The scheduler sends it every RECON_AUDIT_SECONDS (and at each start), and
the first read that completes the discovered holdings' first catch-up sends the store's first
(reconciliation.ledger_audit.first_audit); a message arriving when no holding is known yet,
or when a whole-store audit finished recently, is skipped, so a duplicate costs nothing
(invariant 4) and an audit of nothing is never recorded as clean.
"""

from __future__ import annotations

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from workers.queues import POLLING, PRIORITY_BULK
from workers.retry_policy import MINUTE_MS, NOT_RETRYABLE
from workers.runtime import current_runtime
from workers.stop_signal import stopping

#: A whole audit reads every posting at the gateway rate: hours for a large store at a low rate.
TIME_LIMIT_MS = 6 * 60 * MINUTE_MS

log = structlog.get_logger(__name__)


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_BULK,
    max_retries=1,
    min_backoff=MINUTE_MS,
    max_backoff=5 * MINUTE_MS,
    time_limit=TIME_LIMIT_MS,
    throws=NOT_RETRYABLE,
)
def audit_ledger() -> None:
    """Audit every watched holding, unless one finished within the interval."""
    from reconciliation.ledger_audit import AuditStoppedError, due, fetch_from
    from reconciliation.ledger_audit import audit_ledger as run_audit

    rt = current_runtime()
    with rt.sessions() as session:
        if not due(session, rt.settings.schedules.audit_seconds, rt.clock()):
            log.info(
                "audit.skipped",
                reason="no holding known yet, or a whole-store audit finished within the interval",
            )
            return
    try:
        run_audit(
            rt.sessions,
            fetch_from(rt.gateway),
            page_size=rt.settings.provider.activity_page_size,
            clock=rt.clock,
            stop=stopping,
        )
    except AuditStoppedError as stopped:
        # Whichever worker is left (or the next to start) audits again from the start.
        log.info("audit.stopped", detail=str(stopped))
        audit_ledger.send()
