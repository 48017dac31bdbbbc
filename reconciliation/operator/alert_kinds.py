"""Every kind of alert recon raises, in one list: what a filter accepts and the runbook covers.

The kinds are raised in several places (the drift rules of a pass, the inbox, the subscription
check, the ledger audit); a person filtering by kind should not need to know which. A filter
given a kind not in this list refuses it with the list, instead of answering "no alerts" for a
typo. `docs/alerts.md` has a section per kind (tests/unit/test_alert_runbook.py holds it so).
"""

from __future__ import annotations

from typing import Final

from reconciliation.drift import ALERT_KINDS
from reconciliation.ledger_audit.compare import KINDS as AUDIT_KINDS
from reconciliation.notifications.shape_alerts import KIND as NOT_UNDERSTOOD
from reconciliation.notifications.subscription_check import (
    KIND_FAILURES,
    KIND_INACTIVE,
    KIND_MISSING,
)

#: The fee charged for a transfer made against an accepted quote differs from the quote. Named
#: here so filters and the runbook know it whichever module raises it.
FEE_MISMATCH: Final = "fee_mismatch"

#: Every alert kind, sorted.
ALL_ALERT_KINDS: Final[tuple[str, ...]] = tuple(
    sorted(
        {
            *ALERT_KINDS,
            *AUDIT_KINDS,
            NOT_UNDERSTOOD,
            KIND_MISSING,
            KIND_INACTIVE,
            KIND_FAILURES,
            FEE_MISMATCH,
        }
    )
)


class UnknownAlertKindError(ValueError):
    """A kind that recon never raises; the message lists the ones it does."""


def checked_kind(kind: str) -> str:
    """`kind` if recon raises alerts of it; otherwise an error listing every kind."""
    if kind in ALL_ALERT_KINDS:
        return kind
    close = kind.strip().lower().replace("-", "_").replace(" ", "_")
    hint = f" (did you mean {close}?)" if close in ALL_ALERT_KINDS else ""
    raise UnknownAlertKindError(
        f"{kind!r} is not an alert kind{hint}; the kinds are: {', '.join(ALL_ALERT_KINDS)}"
    )
