"""poller_stuck: a holding's activity cursor has not moved while errors pile up.

`consecutive_errors` counts polls that failed since the cursor last advanced or a poll last
succeeded; at `policy.poller_stuck_errors` the poller is stuck and postings (and so matching and
balances) of that holding are going stale. Clears when a poll succeeds (the counter is reset).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import select

from foundation import moment, redact_text
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.postings.holding_identity import HoldingIdentity, holding_identities
from reconciliation.store.models import ActivityCursor, Holding

KIND: Final = "poller_stuck"
SEVERITY: Final = "high"


class PollerStuck(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        query = (
            select(ActivityCursor, Holding.holding_ref)
            .join(Holding, Holding.id == ActivityCursor.holding_id)
            .where(ActivityCursor.consecutive_errors >= ctx.policy.poller_stuck_errors)
        )
        stuck = list(ctx.session.execute(query))
        names = holding_identities(ctx.session, [ref for _, ref in stuck])
        return [self._finding(cursor, ref, names[str(ref)]) for cursor, ref in stuck]

    def _finding(self, cursor: ActivityCursor, ref: object, holding: HoldingIdentity) -> Finding:
        since = cursor.last_advanced_at.isoformat() if cursor.last_advanced_at else None
        return self.finding(
            f"activity poller of {holding.phrase} has failed {cursor.consecutive_errors} times "
            f"in a row; its cursor last moved {moment(cursor.last_advanced_at)}",
            (ref,),
            {
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
