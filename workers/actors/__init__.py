"""Every actor, declared on the broker installed by workers.broker (imported first).

Importing this package declares them all; `recon worker` and the embedded runner do so before
starting a Worker, so every queue is consumed.
"""

import workers.broker  # noqa: F401 - must come before any actor module
from workers.actors.activity import poll_activity, poll_signalled_activity
from workers.actors.audit import audit_ledger as audit_ledger
from workers.actors.balances import snapshot_balances
from workers.actors.holdings import discover_holdings
from workers.actors.inbox import process_delivery
from workers.actors.reconcile import reconcile
from workers.actors.retention import prune
from workers.actors.subscription import check_subscription
from workers.actors.sweep import enqueue_activity_polls, sweep
from workers.actors.transfers import poll_transfers

__all__ = [
    "check_subscription",
    "discover_holdings",
    "enqueue_activity_polls",
    "poll_activity",
    "poll_signalled_activity",
    "poll_transfers",
    "process_delivery",
    "prune",
    "reconcile",
    "snapshot_balances",
    "sweep",
]
