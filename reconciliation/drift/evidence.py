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


def describe_postings(session: Session, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for batch in chunks(sorted(set(ids))):
        query = (
            select(*POSTING_FIELDS.values())
            .join(holdings, holdings.c.id == postings.c.holding_id)
            .where(postings.c.id.in_(batch))
        )
        for row in session.execute(query):
            item = as_evidence(POSTING_FIELDS, row)
            found[item["postingId"]] = item
    return found


def describe_notifications(session: Session, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for batch in chunks(sorted(set(ids))):
        query = select(*NOTIFICATION_FIELDS.values()).where(notifications.c.id.in_(batch))
        for row in session.execute(query):
            item = as_evidence(NOTIFICATION_FIELDS, row)
            found[item["notificationId"]] = item
    return found


def describe_transfers(session: Session, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for batch in chunks(sorted(set(ids))):
        query = select(*TRANSFER_FIELDS.values()).where(transfers.c.id.in_(batch))
        for row in session.execute(query):
            item = as_evidence(TRANSFER_FIELDS, row)
            found[item["transferId"]] = item
    return found


def describe(
    session: Session, items: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """Evidence of (kind, id) items of any kind, kind 'posting', 'notification' or 'transfer'."""
    wanted: dict[str, set[int]] = {"posting": set(), "notification": set(), "transfer": set()}
    for kind, item_id in items:
        wanted[kind].add(item_id)
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for item_id, ev in describe_postings(session, wanted["posting"]).items():
        found[("posting", item_id)] = ev
    for item_id, ev in describe_notifications(session, wanted["notification"]).items():
        found[("notification", item_id)] = ev
    for item_id, ev in describe_transfers(session, wanted["transfer"]).items():
        found[("transfer", item_id)] = ev
    return found


def natural_key(kind: str, evidence: dict[str, Any]) -> str:
    """The provider's identity of an item, for fingerprints that survive a store rebuild."""
    if kind == "posting":
        return f"{evidence['journalRef']}:{evidence['lineRef']}"
    if kind == "notification":
        return str(evidence["eventId"])
    return str(evidence["transferRef"])
