"""The ledger stream: what the provider actually posted.

Holdings discovered from the endpoint register, their activity cursors and pages of committed
postings, and balance snapshots. This is the truth the other two streams are checked against.
"""

from reconciliation.postings.activity import (
    LEASE_SECONDS,
    LeasedHolding,
    LeaseLostError,
    StoredTerms,
    acquire_lease,
    ensure_cursor_rows,
    release_lease,
    renew_lease,
    store_page,
    watched_without_cursor,
)
from reconciliation.postings.balances import (
    EndpointToRead,
    claim_due_endpoints,
    clear_snapshot_failures,
    endpoints_to_read,
    note_snapshot_failures,
    schedule_next_snapshots,
    store_snapshot,
)
from reconciliation.postings.capacity import (
    CeilingShortfall,
    ReadBudget,
    ceiling_shortfall,
    stored_ceiling_shortfall,
)
from reconciliation.postings.discovery_asks import ask_for_discovery
from reconciliation.postings.due_reads import (
    PRIORITY_CATCH_UP,
    PRIORITY_SIGNALLED,
    PRIORITY_SILENT,
    SILENT_SHARE,
    DueHolding,
    claim_due_holdings,
    holdings_named,
    quiet_interval,
    signal_holdings,
)
from reconciliation.postings.holding_history import (
    HoldingError,
    HoldingList,
    HoldingView,
    holding_view,
    list_holdings,
)
from reconciliation.postings.holding_identity import (
    HoldingIdentity,
    HoldingLookupError,
    find_holdings,
    holding_identities,
    list_identities,
    resolve_holding,
)
from reconciliation.postings.holdings import known_endpoints, needs_read, store_endpoint

__all__ = [
    "LEASE_SECONDS",
    "PRIORITY_CATCH_UP",
    "PRIORITY_SIGNALLED",
    "PRIORITY_SILENT",
    "SILENT_SHARE",
    "CeilingShortfall",
    "DueHolding",
    "EndpointToRead",
    "HoldingError",
    "HoldingIdentity",
    "HoldingList",
    "HoldingLookupError",
    "HoldingView",
    "LeaseLostError",
    "LeasedHolding",
    "ReadBudget",
    "StoredTerms",
    "acquire_lease",
    "ask_for_discovery",
    "ceiling_shortfall",
    "claim_due_endpoints",
    "claim_due_holdings",
    "clear_snapshot_failures",
    "endpoints_to_read",
    "ensure_cursor_rows",
    "find_holdings",
    "holding_identities",
    "holding_view",
    "holdings_named",
    "known_endpoints",
    "list_holdings",
    "list_identities",
    "needs_read",
    "note_snapshot_failures",
    "quiet_interval",
    "release_lease",
    "renew_lease",
    "resolve_holding",
    "schedule_next_snapshots",
    "signal_holdings",
    "store_endpoint",
    "store_page",
    "store_snapshot",
    "stored_ceiling_shortfall",
    "watched_without_cursor",
]
