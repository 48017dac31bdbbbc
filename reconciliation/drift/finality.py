"""finality_overdue: a transfer still awaiting finality past its deadline.

"Late" is `reconciliation.transfers.lateness`, the definition the report and the console use
too. Clears when the transfer reaches a terminal stage.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import select

from foundation import moment, words
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import TRANSFER_FIELDS, split
from reconciliation.store.tables import transfers
from reconciliation.transfers.lateness import finality_deadline, late

KIND: Final = "finality_overdue"
SEVERITY: Final = "medium"


class FinalityOverdue(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        t = transfers
        allowed = ctx.policy.finality_deadline_seconds
        query = select(
            *TRANSFER_FIELDS.values(), t.c.requested_at, t.c.created_at, t.c.finality_deadline_at
        ).where(late(ctx.now, allowed))
        found = []
        for row in ctx.session.execute(query):
            evidence, (requested_at, created_at, deadline_at) = split(TRANSFER_FIELDS, row)
            deadline = finality_deadline(deadline_at, requested_at, created_at, allowed)
            evidence["deadline"] = deadline.isoformat()
            subject = (
                f"transfer {evidence['transferRef']} is still {words(evidence['status'])} "
                f"past its finality deadline ({moment(deadline)})"
            )
            found.append(self.finding(subject, (evidence["transferRef"],), {"transfer": evidence}))
        return found
