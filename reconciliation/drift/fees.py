"""fee_mismatch: a transfer charged a fee other than the one its accepted quote showed.

When recon creates a transfer against an accepted quote (`recon transfer create
--accept-quote`), the quote's fee is what the user agreed to; the spec warns that a created
transfer's totals can differ from the quoted ones. A settled transfer whose fee (its status
read's `fees` totals, in its unit) is not the quoted fee is this alert, with both figures as
evidence. It is never an amount_mismatch: the legs may add up perfectly for the fee charged.

Only settled transfers are judged (terminal and successful): one that failed or was denied
charged nothing, whatever it was quoted. A fee recon could not read is not judged either (its
evidence keeps the raw fee object). Clears when a later status read states the quoted fee;
otherwise a person acknowledges or resolves it once the difference is explained.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import select, true

from foundation import format_money
from reconciliation.alerts.lifecycle import Finding
from reconciliation.drift.base import DriftContext, OneKindRule
from reconciliation.drift.evidence import TRANSFER_FIELDS, split
from reconciliation.store.tables import transfers

KIND: Final = "fee_mismatch"
#: Medium, like a late notification: money moved as the ledger says, but not at the price the
#: user accepted, which someone must explain to them.
SEVERITY: Final = "medium"


class FeeMismatch(OneKindRule, kind=KIND, severity=SEVERITY):
    def find(self, ctx: DriftContext) -> list[Finding]:
        t = transfers
        query = select(
            *TRANSFER_FIELDS.values(),
            t.c.fee_quoted_minor,
            t.c.fee_charged_minor,
            t.c.fee_bearer,
            t.c.fee_evidence,
        ).where(
            # Read through ix_transfers_fee_quoted: only transfers created against a quote.
            t.c.fee_quoted_minor.is_not(None),
            t.c.fee_charged_minor.is_not(None),
            t.c.fee_charged_minor != t.c.fee_quoted_minor,
            t.c.is_terminal == true(),
            t.c.is_successful == true(),
        )
        return [self._finding(*split(TRANSFER_FIELDS, row)) for row in ctx.session.execute(query)]

    def _finding(self, transfer: dict[str, Any], fee: Any) -> Finding:
        quoted, charged, bearer, raw = fee
        unit = transfer["currency"]
        return self.finding(
            f"transfer {transfer['transferRef']} was charged a fee of "
            f"{format_money(int(charged), unit)}, its accepted quote said "
            f"{format_money(int(quoted), unit)}",
            (transfer["transferRef"],),
            {
                "transfer": transfer,
                "fee": {
                    "quotedMinor": str(quoted),
                    "chargedMinor": str(charged),
                    "differenceMinor": int(charged) - int(quoted),
                    "currency": unit,
                    "bearer": bearer,
                    "asRead": raw,
                },
            },
        )
