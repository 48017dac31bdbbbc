"""finality_overdue: a transfer still awaiting finality past its deadline.

The deadline is the transfer's own `finality_deadline_at` when the poller set one, otherwise
its request time (or, failing that, when we first stored it) plus the policy's
`finality_deadline_seconds`. Clears when the transfer reaches a terminal stage.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from sqlalchemy import Table, false, select

from foundation.readable import moment, words
from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding, fingerprint
from reconciliation.drift.base import DriftContext
from reconciliation.drift.evidence import TRANSFER_FIELDS, as_evidence
from reconciliation.store.models import Transfer

KIND: Final = "finality_overdue"
SEVERITY: Final = "medium"

transfers: Table = Transfer.__table__  # type: ignore[assignment]


class FinalityOverdue:
    kinds = (KIND,)

    def assess(self, ctx: DriftContext) -> Assessment:
        t = transfers
        allowed = timedelta(seconds=ctx.policy.finality_deadline_seconds)
        query = select(
            *TRANSFER_FIELDS.values(), t.c.requested_at, t.c.created_at, t.c.finality_deadline_at
        ).where(t.c.is_terminal == false())
        width = len(TRANSFER_FIELDS)
        found = []
        for row in ctx.session.execute(query):
            requested_at, created_at, deadline_at = row[width:]
            deadline = deadline_at or (requested_at or created_at) + allowed
            if ctx.now <= deadline:
                continue
            evidence = as_evidence(TRANSFER_FIELDS, row[:width])
            evidence["deadline"] = deadline.isoformat()
            found.append(
                Finding(
                    kind=KIND,
                    severity=SEVERITY,
                    subject=(
                        f"transfer {evidence['transferRef']} is still "
                        f"{words(evidence['status'])} past its finality deadline "
                        f"({moment(deadline)})"
                    ),
                    fingerprint=fingerprint(KIND, evidence["transferRef"]),
                    evidence={"transfer": evidence},
                )
            )
        return Assessment(kinds=self.kinds, findings=found)
