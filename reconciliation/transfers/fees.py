"""What a transfer's fee is, as recon stores it: charged, bearer, kind, quoted, and evidence.

Three sources, each trusted for what it says: the fee instruction recon sent (who pays), the
accepted quote recon sent (what the fee was expected to be), and each status read's `fees`
(what the fee is). The status read's figures replace the earlier ones on every read, since
the spec says a created transfer's totals can differ from the quoted ones. Element shapes are
read tolerantly (upstream.wire.fees); what cannot be read stays in `fee_evidence` and leaves
the fee unknown (None), never a guessed 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from upstream import Fees, TransferRequest, bearer_of, read_fees


def instruction_bearer(request: TransferRequest) -> str | None:
    """The bearer of the fee instruction a request carries, normalised; None without one."""
    if request.fee_instruction is None:
        return None
    return bearer_of(request.fee_instruction.get("bearer"))


def quoted_fee(accepted_quote: Mapping[str, Any] | None, currency: str | None) -> int | None:
    """The fee an accepted quote (a quote value, whole) states in `currency`; None without a
    quote or when its totals cannot be read."""
    if accepted_quote is None:
        return None
    totals, lines = accepted_quote.get("totals"), accepted_quote.get("lines")
    reading = read_fees(
        totals if isinstance(totals, list) else (), lines if isinstance(lines, list) else ()
    )
    return reading.charged_in(currency)


def fee_columns(fees: Fees | None, currency: str | None) -> dict[str, Any]:
    """The transfer columns a status read's `fees` sets (none when it carries no `fees`).

    `fee_bearer` is set only from the lines' words, so that the caller keeps the bearer of the
    instruction recon sent when it has one.
    """
    if fees is None:
        return {}
    reading = read_fees(fees.totals, fees.lines)
    evidence: dict[str, Any] = {
        "status": fees.status,
        "reason": fees.reason,
        "totals": list(fees.totals),
        "lines": list(fees.lines),
    }
    if reading.unreadable:
        evidence["unreadable"] = list(reading.unreadable)
    return {
        "fee_charged_minor": reading.charged_in(currency),
        "fee_status": fees.status,
        "fee_kind": reading.kind,
        "fee_evidence": evidence,
        "lines_bearer": reading.bearer,
    }


def apply_fee_columns(transfer: Any, fees: Fees | None) -> None:
    """Set a transfer row's fee columns from a status read (keeping an instructed bearer).

    Any change bumps `fee_revision`, so the next pass adds the transfer's legs up again for the
    fee it now knows (its legs may have been matched and checked while the fee was unknown).
    """
    columns = fee_columns(fees, transfer.currency)
    if not columns:
        return
    lines_bearer = columns.pop("lines_bearer")
    if transfer.fee_bearer is None:
        columns["fee_bearer"] = lines_bearer
    changed = False
    for name, value in columns.items():
        if getattr(transfer, name) != value:
            setattr(transfer, name, value)
            changed = True
    if changed:
        transfer.fee_revision = (transfer.fee_revision or 0) + 1
