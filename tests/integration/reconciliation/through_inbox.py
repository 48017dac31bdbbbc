"""Deliveries stored the receiver's way and processed the worker's way, for worlds built in tests.

A world that needs notifications as production makes them (bodies read by the payload shapes,
rows linked to their deliveries) sends its bodies through here rather than writing rows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.notifications.processing import process_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.models import Delivery


def deliver_through_inbox(
    sessions: sessionmaker[Session], bodies: list[tuple[str, bytes]], at: datetime
) -> None:
    """Record (delivery id, body) pairs as received at `at`, then process every pending one."""
    with sessions() as s, s.begin():
        record_deliveries(
            s.connection(),
            [
                InboundDelivery(
                    delivery_id=delivery_id,
                    body=body,
                    headers={},
                    scheme="standard",
                    event_type=None,
                    received_at=at,
                )
                for delivery_id, body in bodies
            ],
        )
    with transaction(sessions) as s:
        pending = list(s.scalars(select(Delivery.id).where(Delivery.state == "pending")))
        process_deliveries(s, pending, at + timedelta(seconds=1))
