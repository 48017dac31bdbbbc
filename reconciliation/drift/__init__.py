"""Drift rules, one module per family; `RULES` is the order a pass runs them in.

Every alert kind recon raises is listed in `ALERT_KINDS`, with whether a pass resolves it by
itself when its condition clears.
"""

from __future__ import annotations

from typing import Final

from reconciliation.alerts.changes import ALERT_STORM
from reconciliation.drift.ambiguity import AmbiguousMatch
from reconciliation.drift.balance import BalanceMismatch
from reconciliation.drift.base import DriftContext, DriftRule
from reconciliation.drift.contradictions import StatusContradiction
from reconciliation.drift.deliveries import DeliveryBodyConflict
from reconciliation.drift.fee_postings import FeeUnexplained
from reconciliation.drift.fees import FeeMismatch
from reconciliation.drift.finality import FinalityOverdue
from reconciliation.drift.mismatches import MatchedMoneyMismatch
from reconciliation.drift.notifications import NotificationWithoutPosting
from reconciliation.drift.pollers import PollerStuck
from reconciliation.drift.postings import PostingWithoutNotification
from reconciliation.drift.subscriptions import SubscriptionInactive
from reconciliation.drift.taken_apart import UnmatchedByHand

#: The rules of a pass, in order: cheap set checks first, the ledger sum last.
RULES: Final[tuple[DriftRule, ...]] = (
    AmbiguousMatch(),
    UnmatchedByHand(),
    StatusContradiction(),
    NotificationWithoutPosting(),
    PostingWithoutNotification(),
    MatchedMoneyMismatch(),
    FeeMismatch(),
    FeeUnexplained(),
    DeliveryBodyConflict(),
    FinalityOverdue(),
    SubscriptionInactive(),
    PollerStuck(),
    BalanceMismatch(),
)

#: Every alert kind -> True when a pass resolves it once its condition clears.
ALERT_KINDS: Final[dict[str, bool]] = {
    **{kind: True for rule in RULES for kind in rule.kinds},
    DeliveryBodyConflict.kinds[0]: False,
    ALERT_STORM: True,
}

__all__ = ["ALERT_KINDS", "RULES", "DriftContext", "DriftRule"]
