"""The words matching is made of: rule names, event types, and what each event is about.

Kept in one module so that the rules, the drift checks and the reports agree on them, and a
change (say, a provider that notifies debits too) is one edit here.
"""

from __future__ import annotations

from typing import Final

#: Rules, strongest first, as recorded in matches.rule.
RULE_TRANSFER_REF: Final = "transfer_ref"
RULE_RECEIPT_REF: Final = "receipt_ref"
RULE_ACCOUNT_AMOUNT: Final = "account_amount_window"
#: A fee leg under a receipt of its own, joined to its transfer: by a receipt or line ref the
#: transfer's fee lines name, or by holding, unit, a share of the fee and the window.
RULE_FEE_RECEIPT: Final = "fee_receipt"
RULE_FEE_WINDOW: Final = "fee_holding_amount_window"
#: A transfer the gateway denied: nothing moved, nothing is owed a counterpart (no posting, no
#: webhook), so it is reconciled on its own.
RULE_NOTHING_MOVED: Final = "nothing_moved"
RULE_MANUAL: Final = "manual"
#: A person accepted one item without a counterpart (with a reason): a decision, not a match,
#: and the report counts it apart from matched items.
RULE_ACCEPTED: Final = "accepted"
RULES: Final = (
    RULE_TRANSFER_REF,
    RULE_RECEIPT_REF,
    RULE_ACCOUNT_AMOUNT,
    RULE_FEE_RECEIPT,
    RULE_FEE_WINDOW,
    RULE_NOTHING_MOVED,
    RULE_MANUAL,
    RULE_ACCEPTED,
)
#: Rows a person decided: never recomputed from the facts, kept as they are by a rebuild.
PEOPLES_RULES: Final = (RULE_MANUAL, RULE_ACCEPTED)

#: Who made an automatic match.
MATCHER: Final = "recon"

PAYMENT_RECEIVED: Final = "PAYMENT_RECEIVED"
TRANSACTION_COMPLETED: Final = "TRANSACTION_COMPLETED"
TRANSACTION_FAILED: Final = "TRANSACTION_FAILED"

#: Events that claim money moved, so a posting must exist behind them.
POSTED_EVENTS: Final = (PAYMENT_RECEIVED, TRANSACTION_COMPLETED)

#: Events that claim money did not move.
FAILED_EVENTS: Final = (TRANSACTION_FAILED,)

#: Every event that matching looks at; ACCOUNT_CREATED and KYC_VERIFIED carry no money.
MONEY_EVENTS: Final = POSTED_EVENTS + FAILED_EVENTS

#: Which leg an event speaks of on the holding it names: a payment received is the credit on
#: the receiving account; a completed transfer is reported on the source account, its debit.
EVENT_SIDE: Final = {PAYMENT_RECEIVED: "credit", TRANSACTION_COMPLETED: "debit"}

#: The one terminal transfer status the gateway spec names: a denial at reservation. Other
#: statuses are the provider's words, never compared with: reconciliation.matching.transfer_states
#: decides from `is_terminal` and `is_successful`.
STATUS_DENIED: Final = "reservation_denied"
