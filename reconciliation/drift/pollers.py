"""poller_stuck: a holding's activity cursor has not moved while errors pile up.

`consecutive_errors` counts polls that failed since the cursor last advanced or a poll last
succeeded; at `policy.poller_stuck_errors` the poller is stuck and postings (and so matching and
balances) of that holding are going stale. Clears when a poll succeeds (the counter is reset).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import select

from foundation import moment, redact_text
from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding, fingerprint
from reconciliation.drift.base import DriftContext
from reconciliation.postings.holding_identity import holding_identities
from reconciliation.store.models import ActivityCursor, Holding

KIND: Final = "poller_stuck"
SEVERITY: Final = "high"


class PollerStuck:
    kinds = (KIND,)

    def assess(self, ctx: DriftContext) -> Assessment:
        query = (
            select(ActivityCursor, Holding.holding_ref)
            .join(Holding, Holding.id == ActivityCursor.holding_id)
            .where(ActivityCursor.consecutive_errors >= ctx.policy.poller_stuck_errors)
        )
        stuck = list(ctx.session.execute(query))
        names = holding_identities(ctx.session, [ref for _, ref in stuck])
        found = []
        for cursor, holding_ref in stuck:
            holding = names[str(holding_ref)]
            since = cursor.last_advanced_at.isoformat() if cursor.last_advanced_at else None
            found.append(
                Finding(
                    kind=KIND,
                    severity=SEVERITY,
                    subject=(
                        f"activity poller of {holding.phrase} has failed "
                        f"{cursor.consecutive_errors} times in a row; its cursor last moved "
                        f"{moment(cursor.last_advanced_at)}"
                    ),
                    fingerprint=fingerprint(KIND, holding_ref),
                    evidence={
                        **holding.as_evidence(),
                        "consecutiveErrors": cursor.consecutive_errors,
                        "lastAdvancedAt": since,
                        "lastError": redact_text(cursor.last_error or ""),
                        "cursor": {
                            "afterPostedAt": cursor.after_posted_at,
                            "afterReceiptRef": cursor.after_receipt_ref,
                            "afterLineRef": cursor.after_line_ref,
                            "sortDirection": cursor.sort_direction,
                        },
                    },
                )
            )
        return Assessment(kinds=self.kinds, findings=found)
