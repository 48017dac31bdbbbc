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

from foundation import format_money
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import describe_items
from reconciliation.matching.backlog import in_backlog
from reconciliation.postings.holding_identity import holding_identities
from reconciliation.store.tables import locators, postings

KIND: Final = "posting_without_notification"
SEVERITY: Final = "medium"

#: The side of a posting that is expected to be notified (see the module docstring).
NOTIFIED_SIDE: Final = "credit"


class PostingWithoutNotification(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        cutoff = ctx.ago(ctx.policy.notification_grace_seconds)
        p = postings
        query = select(p.c.id).where(
            in_backlog("posting", p.c.id),
            p.c.side == NOTIFIED_SIDE,
            exists().where(locators.c.holding_id == p.c.holding_id),
            p.c.posted_at <= cutoff,
            p.c.ingested_at <= cutoff,
        )
        described = describe_items(ctx.session, "posting", ctx.session.scalars(query)).values()
        names = holding_identities(ctx.session, [ev["holdingRef"] for ev in described])
        return [
            self.finding(
                f"{ev['side']} of {format_money(int(ev['amountMinor']), ev['currency'])} on "
                f"{names[ev['holdingRef']].phrase} (receipt {ev['receiptRef']}) was never notified",
                (ev["journalRef"], ev["lineRef"]),
                {"posting": ev, "holding": names[ev["holdingRef"]].as_evidence()},
            )
            for ev in described
        ]
