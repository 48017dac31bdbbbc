"""A delivery id sent twice with different bodies, the way the demo's fault does it: the first
processed into a notification, the second quarantined as a `delivery_body_conflict`."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.models import Delivery
from reconciliation.store.types import utcnow
from tests.integration.reconciliation.builders import Store
from tests.integration.reconciliation.through_inbox import deliver_through_inbox

DELIVERY_ID = "evt-re-sent-0001"


def _body(holding_ref: uuid.UUID, receipt: uuid.UUID, amount: str) -> bytes:
    stamp = (utcnow() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return json.dumps(
        {
            "id": DELIVERY_ID,
            "event": "PAYMENT_RECEIVED",
            "createdAt": stamp,
            "data": {
                "holdingRef": str(holding_ref),
                "receiptRef": str(receipt),
                "amount": amount,
                "currency": "NGN",
                "status": "SUCCESSFUL",
            },
        }
    ).encode()


def conflicting_bodies(sessions: sessionmaker[Session]) -> tuple[int, int]:
    """A posting of 612.50 NGN, told first as 612.51 then, under the same id, as 612.50."""
    store = Store(sessions)
    holding = store.holding()
    receipt = uuid.uuid4()
    an_hour_ago = utcnow() - timedelta(hours=1)
    store.posting(holding, 61_250, receipt=receipt, posted=an_hour_ago)
    deliver_through_inbox(
        sessions, [(DELIVERY_ID, _body(holding.holding_ref, receipt, "612.51"))], an_hour_ago
    )
    deliver_through_inbox(
        sessions, [(DELIVERY_ID, _body(holding.holding_ref, receipt, "612.50"))], an_hour_ago
    )
    with sessions() as s:
        first, second = s.scalars(select(Delivery).order_by(Delivery.id)).all()
        assert (first.state, second.state) == ("processed", "quarantined")
        return first.id, second.id
