"""The claims stream: what the provider's webhooks say happened.

The inbox of raw deliveries (bytes kept exactly as received), their processing into normalised
notifications, and our webhook registration whose health decides whether any claim arrives.
"""

from reconciliation.notifications.inbox import (
    BODY_CONFLICT_REASON,
    MAX_PAGE_SIZE,
    PENDING,
    QUARANTINED,
    STATES,
    InboundDelivery,
    Outcome,
    Recorded,
    outcomes,
    plan_batch,
    record_deliveries,
    record_others,
    stored_delivery_id,
)
from reconciliation.notifications.inbox_access import (
    MAX_REPLAY,
    MAX_ROW_ID,
    checked_row_id,
    find_by_delivery_id,
    get_delivery,
    inbox_depth,
    list_deliveries,
)
from reconciliation.notifications.inbox_insert import insert_originals_async, use_statement_commits
from reconciliation.notifications.inbox_views import (
    BulkReplayOut,
    DeliveryDetail,
    DeliveryPageOut,
    DeliverySummary,
    detail,
    replay_summary,
    summarise,
)
from reconciliation.notifications.processing import (
    ProcessOutcome,
    advance_resend_mark,
    pending_deliveries,
    process_deliveries,
    read_resend_mark,
)
from reconciliation.notifications.registration import (
    RegistrationBusyError,
    RegistrationResult,
    company_client,
    ensure_registered,
    process_owner,
    sync_webhooks,
)
from reconciliation.notifications.subscription_check import CheckOutcome, check_subscriptions
from reconciliation.notifications.subscriptions import (
    accepted_secrets,
    list_subscriptions,
    secret_counts,
)

__all__ = [
    "BODY_CONFLICT_REASON",
    "MAX_PAGE_SIZE",
    "MAX_REPLAY",
    "MAX_ROW_ID",
    "PENDING",
    "QUARANTINED",
    "STATES",
    "BulkReplayOut",
    "CheckOutcome",
    "DeliveryDetail",
    "DeliveryPageOut",
    "DeliverySummary",
    "InboundDelivery",
    "Outcome",
    "ProcessOutcome",
    "Recorded",
    "RegistrationBusyError",
    "RegistrationResult",
    "accepted_secrets",
    "advance_resend_mark",
    "check_subscriptions",
    "checked_row_id",
    "company_client",
    "detail",
    "ensure_registered",
    "find_by_delivery_id",
    "get_delivery",
    "inbox_depth",
    "insert_originals_async",
    "list_deliveries",
    "list_subscriptions",
    "outcomes",
    "pending_deliveries",
    "plan_batch",
    "process_deliveries",
    "process_owner",
    "read_resend_mark",
    "record_deliveries",
    "record_others",
    "replay_summary",
    "secret_counts",
    "stored_delivery_id",
    "summarise",
    "sync_webhooks",
    "use_statement_commits",
]
