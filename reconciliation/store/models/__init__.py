"""The local store: one metadata for SQLite and PostgreSQL.

Money is integer minor units (BIGINT) everywhere; there is no float column. Every timestamp is
aware UTC (`UTCDateTime`). Uniqueness constraints carry the idempotency of re-ingestion:
postings on (journal_ref, line_ref), deliveries on (delivery_id, body_sha256), alerts on
fingerprint, transfers on transfer_ref, outbound requests on idempotency_key.

`match_status` on the three streams is 'exception' for an item a person must decide, and
'unmatched' otherwise. Whether an item is matched is answered by `matches` (an active row names
it), not by rewriting the item: a pass over a million items must not rewrite a million rows,
which alone would take longer than the whole pass may (docs/decisions.md, "Figures behind the
code's choices"). Matching is incremental
through per-stream id watermarks and `match_backlog` (items seen but not matched yet); see
reconciliation/matching/backlog.py.
"""

from reconciliation.store.models.base import EXCEPTION, MATCHED, NAMING_CONVENTION, UNMATCHED, Base
from reconciliation.store.models.matching import Alert, Match, MatchBacklog
from reconciliation.store.models.notifications import (
    Delivery,
    Notification,
    Subscription,
    WebhookSecret,
)
from reconciliation.store.models.operations import (
    AuditEvent,
    AuditRun,
    ConsoleSession,
    Lease,
    Watermark,
)
from reconciliation.store.models.postings import (
    ActivityCursor,
    BalanceCheck,
    BalanceSnapshot,
    Holding,
    Locator,
    Posting,
)
from reconciliation.store.models.transfers import (
    OutboundRequest,
    Transfer,
    TransferChange,
    TransferFeeReceipt,
    TransferIntent,
)

__all__ = [
    "EXCEPTION",
    "MATCHED",
    "NAMING_CONVENTION",
    "UNMATCHED",
    "ActivityCursor",
    "Alert",
    "AuditEvent",
    "AuditRun",
    "BalanceCheck",
    "BalanceSnapshot",
    "Base",
    "ConsoleSession",
    "Delivery",
    "Holding",
    "Lease",
    "Locator",
    "Match",
    "MatchBacklog",
    "Notification",
    "OutboundRequest",
    "Posting",
    "Subscription",
    "Transfer",
    "TransferChange",
    "TransferFeeReceipt",
    "TransferIntent",
    "Watermark",
    "WebhookSecret",
]
