"""Rebuild: recompute every derived table from the raw facts and compare it with the live one.

Raw facts are what recon was told or did: delivery bytes, stored postings, balance snapshots,
transfers and their status history, transfer intents, and the decisions people made (manual
matches and unmatches). Everything else (notifications, matches, exceptions, the backlog, balance
checks, alert states) is derived, and a store whose derived state cannot be derived again from
its facts has a bug somewhere. `run.rebuild` writes a fresh copy into a scratch schema (or a
scratch SQLite file), `compare` lists every difference, `digest` summarises each derived table
in one line, and `swap` replaces the live derived state when the operator accepts the result.
"""

from reconciliation.rebuild.digest import state_digest
from reconciliation.rebuild.run import Mode, RebuildError, rebuild
from reconciliation.rebuild.scratch import ScratchError
from reconciliation.rebuild.swap import StaleRebuildError

__all__ = [
    "Mode",
    "RebuildError",
    "ScratchError",
    "StaleRebuildError",
    "rebuild",
    "state_digest",
]
