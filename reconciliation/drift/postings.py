"""posting_without_notification: the ledger moved money the provider never told us about.

Which postings are expected to be notified (docs/decisions.md, "Reconciler"): credits to a
holding that has a locator (a bank account number the outside world pays into). Those are the
payments a virtual-account provider announces; debits and credits to internal holdings are
reconciled through their transfer instead. A posting waits out the notification grace (from
when it was posted and when we read it) before its silence is drift. Clears when its
notification arrives and matches.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from foundation import format_money
from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import Finding, fingerprint
from reconciliation.drift.base import DriftContext
from reconciliation.drift.evidence import describe_items
from reconciliation.matching.backlog import in_backlog
from reconciliation.postings.holding_identity import holding_identities
from reconciliation.store.tables import locators, postings

KIND: Final = "posting_without_notification"
SEVERITY: Final = "medium"

#: The side of a posting that is expected to be notified (see the module docstring).
NOTIFIED_SIDE: Final = "credit"


class PostingWithoutNotification:
    kinds = (KIND,)

    def assess(self, ctx: DriftContext) -> Assessment:
        cutoff = ctx.ago(ctx.policy.notification_grace_seconds)
        p = postings
        query = select(p.c.id).where(
            in_backlog("posting", p.c.id),
            p.c.side == NOTIFIED_SIDE,
            exists().where(locators.c.holding_id == p.c.holding_id),
            p.c.posted_at <= cutoff,
            p.c.ingested_at <= cutoff,
        )
        ids = [int(i) for i in ctx.session.scalars(query)]
        return Assessment(kinds=self.kinds, findings=findings(ctx.session, ids))


def findings(session: Session, ids: list[int]) -> list[Finding]:
    described = describe_items(session, "posting", ids).values()
    names = holding_identities(session, [ev["holdingRef"] for ev in described])
    return [
        Finding(
            kind=KIND,
            severity=SEVERITY,
            subject=(
                f"{ev['side']} of {format_money(int(ev['amountMinor']), ev['currency'])} on "
                f"{names[ev['holdingRef']].phrase} (receipt {ev['receiptRef']}) was never notified"
            ),
            fingerprint=fingerprint(KIND, ev["journalRef"], ev["lineRef"]),
            evidence={"posting": ev, "holding": names[ev["holdingRef"]].as_evidence()},
        )
        for ev in described
    ]
