"""Evidence receipts: the gateway's proof that it saw or did something.

Kept on every result and every error so that the store can file them next to what they prove
(matching uses receipt references as its second-strongest key).
"""

from __future__ import annotations

from uuid import UUID

import msgspec


class Evidence(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One receipt: its reference and, when the gateway names it, the runtime that issued it."""

    receipt_ref: UUID
    source: str | None = None


def merge_evidence(*groups: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Join receipt lists, one entry per receipt, keeping the variant that names a source.

    The success wrapper lists bare receipts and the body lists the same receipts with their
    source; the store wants each receipt once with as much as is known about it.
    """
    order: list[UUID] = []
    best: dict[UUID, Evidence] = {}
    for group in groups:
        for item in group:
            known = best.get(item.receipt_ref)
            if known is None:
                order.append(item.receipt_ref)
                best[item.receipt_ref] = item
            elif known.source is None and item.source is not None:
                best[item.receipt_ref] = item
    return tuple(best[ref] for ref in order)
