"""What a transfer's fee is, as recon stores it: charged, bearer, kind, quoted, and evidence.

Three sources, each trusted for what it says: the fee instruction recon sent (who pays), the
accepted quote recon sent (what the fee was expected to be), and each status read's `fees`
(what the fee is). The status read's figures replace the earlier ones on every read, since
the spec says a created transfer's totals can differ from the quoted ones. Element shapes are
read tolerantly (upstream.wire.fees); what cannot be read stays in `fee_evidence` and leaves
the fee unknown (None), never a guessed 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session

from reconciliation.store.tables import transfer_fee_receipts
from upstream import Fees, TransferRequest, bearer_of, posting_refs, read_fees


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


def fee_receipt_refs(evidence: Mapping[str, Any] | None) -> set[uuid.UUID]:
    """The receipt and line refs the fee's totals and lines name (any shape, any depth): where
    the provider says it posted the fee. Text that is not a uuid names no posting of ours."""
    if not evidence:
        return set()
    refs: set[uuid.UUID] = set()
    for text in posting_refs([evidence.get("totals"), evidence.get("lines")]):
        try:
            refs.add(uuid.UUID(text))
        except ValueError:
            continue
    return refs


def replace_fee_receipts(session: Session, transfer_id: int, evidence: Any) -> None:
    """Store the refs a transfer's fee names, replacing those of its previous fee."""
    session.execute(
        delete(transfer_fee_receipts).where(transfer_fee_receipts.c.transfer_id == transfer_id)
    )
    refs = fee_receipt_refs(evidence if isinstance(evidence, Mapping) else None)
    if refs:
        session.execute(
            insert(transfer_fee_receipts),
            [{"ref": ref, "transfer_id": transfer_id} for ref in sorted(refs)],
        )


def apply_fee_columns(transfer: Any, fees: Fees | None) -> bool:
    """Set a transfer row's fee columns from a status read (keeping an instructed bearer).

    Any change bumps `fee_revision`, so the next pass adds the transfer's legs up again for the
    fee it now knows (its legs may have been matched and checked while the fee was unknown).
    Returns whether anything changed.
    """
    columns = fee_columns(fees, transfer.currency)
    if not columns:
        return False
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
    return changed
