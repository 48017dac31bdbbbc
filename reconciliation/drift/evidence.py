"""The evidence an alert carries: the refs and receipts of the items involved.

A person reading an alert must be able to find every item at the provider without opening the
store, so evidence is the provider's own references (journalRef, lineRef, receiptRef,
transferRef, event id), the amount in minor units and the time, plus our row id for
`recon match`. Built in one place so every alert describes an item the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.store.in_lists import chunks
from reconciliation.store.tables import holdings, notifications, postings, transfers

#: Evidence field name -> column, per item kind.
POSTING_FIELDS: Final = {
    "postingId": postings.c.id,
    "journalRef": postings.c.journal_ref,
    "lineRef": postings.c.line_ref,
    "receiptRef": postings.c.receipt_ref,
    "holdingRef": holdings.c.holding_ref,
    "postedAt": postings.c.posted_at,
    "side": postings.c.side,
    # The leg's journalKind as the provider named it: a leg of a kind recon does not know is
    # described (never alerted on) by it.
    "journalKind": postings.c.kind,
    "amountMinor": postings.c.amount_minor,
    "currency": postings.c.currency,
}
NOTIFICATION_FIELDS: Final = {
    "notificationId": notifications.c.id,
    "eventId": notifications.c.event_id,
    "eventType": notifications.c.event_type,
    "transferRef": notifications.c.transfer_ref,
    "receiptRef": notifications.c.receipt_ref,
    "holdingRef": notifications.c.holding_ref,
    "accountNumber": notifications.c.account_number,
    "amountMinor": notifications.c.amount_minor,
    "currency": notifications.c.currency,
    "claimedStatus": notifications.c.claimed_status,
    "occurredAt": notifications.c.occurred_at,
}
TRANSFER_FIELDS: Final = {
    "transferId": transfers.c.id,
    "transferRef": transfers.c.transfer_ref,
    "stage": transfers.c.stage,
    "status": transfers.c.status,
    "amountMinor": transfers.c.amount_minor,
    "currency": transfers.c.currency,
    "feeChargedMinor": transfers.c.fee_charged_minor,
    "feeBearer": transfers.c.fee_bearer,
    "sourceHoldingRef": transfers.c.source_holding_ref,
    "destHoldingRef": transfers.c.dest_holding_ref,
    "requestedAt": transfers.c.requested_at,
}


def plain(value: Any) -> Any:
    """A JSON-safe value: uuids and times as text, ints stay ints (money is never a float)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def as_evidence(fields: dict[str, Any], row: Any) -> dict[str, Any]:
    """The row as evidence; amounts (`...Minor`) as strings of digits, exact in any JSON reader."""
    return {
        name: str(value) if name.endswith("Minor") and value is not None else plain(value)
        for name, value in zip(fields, row, strict=True)
    }


#: Item kind -> its evidence fields (the row id first) and the rows they are read from.
ITEMS: Final = {
    "posting": (POSTING_FIELDS, postings.join(holdings, holdings.c.id == postings.c.holding_id)),
    "notification": (NOTIFICATION_FIELDS, notifications),
    "transfer": (TRANSFER_FIELDS, transfers),
}


def split(fields: dict[str, Any], row: Any) -> tuple[dict[str, Any], Any]:
    """A row that starts with these fields: them as evidence, and the columns after them."""
    return as_evidence(fields, row[: len(fields)]), row[len(fields) :]


def describe_items(session: Session, kind: str, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Evidence of items of one kind ('posting', 'notification', 'transfer'), by row id."""
    fields, rows = ITEMS[kind]
    row_id = next(iter(fields.values()))
    found: dict[int, dict[str, Any]] = {}
    for batch in chunks(sorted(set(ids))):
        query = select(*fields.values()).select_from(rows).where(row_id.in_(batch))
        for row in session.execute(query):
            found[row[0]] = as_evidence(fields, row)
    return found


def describe(
    session: Session, items: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """Evidence of (kind, id) items of any kind."""
    wanted = list(items)
    return {
        (kind, item_id): ev
        for kind in ITEMS
        for item_id, ev in describe_items(
            session, kind, (i for k, i in wanted if k == kind)
        ).items()
    }


def natural_key(kind: str, evidence: dict[str, Any]) -> str:
    """The provider's identity of an item, for fingerprints that survive a store rebuild."""
    if kind == "posting":
        return f"{evidence['journalRef']}:{evidence['lineRef']}"
    if kind == "notification":
        return str(evidence["eventId"])
    return str(evidence["transferRef"])
