"""check_subscription: read our webhooks at the company API and alert on trouble.

The comparison and the alerts live in reconciliation.notifications.subscription_check; this actor only reads
the listing and runs it in one transaction.
"""

from __future__ import annotations

import dramatiq
import structlog

import workers.broker  # noqa: F401 - the broker is installed before any actor is declared
from reconciliation.notifications import CheckOutcome, check_subscriptions
from reconciliation.store import transaction
from workers.queues import POLLING, PRIORITY_URGENT
from workers.retry_policy import MINUTE_MS, NOT_RETRYABLE, SECOND_MS
from workers.runtime import Runtime, current_runtime

log = structlog.get_logger(__name__)


def check_webhooks(rt: Runtime) -> CheckOutcome:
    """List our webhooks and compare them with the stored subscriptions."""
    listing = rt.company.list_webhooks()
    with transaction(rt.sessions) as session:
        return check_subscriptions(session, listing.webhooks, rt.clock())


@dramatiq.actor(
    queue_name=POLLING,
    priority=PRIORITY_URGENT,
    max_retries=2,
    min_backoff=5 * SECOND_MS,
    max_backoff=MINUTE_MS,
    time_limit=MINUTE_MS,
    throws=NOT_RETRYABLE,
)
def check_subscription() -> None:
    """Alert when our webhook is not ACTIVE, is gone, or its failed deliveries rose."""
    outcome = check_webhooks(current_runtime())
    log.info(
        "subscription.checked",
        checked=outcome.checked,
        raised=outcome.raised,
        resolved=outcome.resolved,
    )
