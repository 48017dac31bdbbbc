"""Audit: re-read every holding's posted activity from the gateway and compare it with the store.

A separate read from the start, never through the live cursors (they stay exactly where the
pollers left them, invariant 3), so it catches what the incremental reader cannot: a posting the
provider added behind a cursor, a stored posting the provider no longer shows, a field that
changed. Each divergence is an alert (deduplicated by fingerprint, resolved by the next clean
audit), and each audit leaves an `audit_runs` row that reports quote (`summary.last_audit`).
"""

from reconciliation.ledger_audit.compare import DIFFERS, MISSING, UNKNOWN
from reconciliation.ledger_audit.first_audit import claim_first_audit, first_reads_done
from reconciliation.ledger_audit.run import (
    AuditScopeError,
    AuditStoppedError,
    audit_ledger,
    due,
    fetch_from,
)
from reconciliation.ledger_audit.summary import AuditSummary, last_audit

__all__ = [
    "DIFFERS",
    "MISSING",
    "UNKNOWN",
    "AuditScopeError",
    "AuditStoppedError",
    "AuditSummary",
    "audit_ledger",
    "claim_first_audit",
    "due",
    "fetch_from",
    "first_reads_done",
    "last_audit",
]
