"""process_delivery's core: inbox rows become notifications, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.notifications.inbox import InboundDelivery, record_deliveries, reset_for_replay
from reconciliation.notifications.processing import process_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.models import Delivery, Notification, Transfer

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)


def payload(event_id: str, transfer_ref: str | None, amount: str | None = "1500.50") -> bytes:
    doc: dict[str, Any] = {
        "id": event_id,
        "event": "TRANSACTION_COMPLETED" if amount is not None else "ACCOUNT_CREATED",
        "createdAt": "2026-11-22T01:59:58.250Z",
        "data": {
            "transferRef": transfer_ref,
            "receiptRef": str(uuid.uuid4()) if amount else None,
            "accountRef": str(uuid.uuid4()),
            "endpointRef": str(uuid.uuid4()),
            "holdingRef": str(uuid.uuid4()),
            "accountNumber": "0123456789",
            "bankCode": "000",
            "amount": amount,
            "currency": "NGN" if amount else None,
            "status": "SUCCESSFUL" if amount else None,
            "narration": "t",
        },
    }
    return json.dumps(doc).encode()


def store(factory: sessionmaker[Session], *bodies: tuple[str, bytes]) -> list[int]:
    with transaction(factory) as session:
        recorded = record_deliveries(
            session.connection(),
            [
                InboundDelivery(
                    delivery_id=event_id,
                    body=body,
                    headers={"webhook-id": event_id},
                    scheme="standard",
                    event_type=None,
                    received_at=NOW - timedelta(seconds=5),
                )
                for event_id, body in bodies
            ],
        )
    ids = [r.row_id for r in recorded]
    assert all(i is not None for i in ids)
    return [i for i in ids if i is not None]


def process(factory: sessionmaker[Session], pks: list[int], now: datetime = NOW) -> Any:
    with transaction(factory) as session:
        return process_deliveries(session, pks, now)


def test_a_delivery_becomes_one_exact_notification_and_names_its_transfer(
    session_factory: sessionmaker[Session],
) -> None:
    transfer_ref = str(uuid.uuid4())
    body = payload("evt-a", transfer_ref)
    [pk] = store(session_factory, ("evt-a", body))
    outcome = process(session_factory, [pk])
    assert outcome.processed == [pk]
    with session_factory() as session:
        note = session.scalars(select(Notification)).one()
        delivery = session.get(Delivery, pk)
        transfer = session.scalars(select(Transfer)).one()
    assert note.delivery_pk == pk
    assert (note.amount_minor, note.currency, note.account_number) == (150050, "NGN", "0123456789")
    assert note.transfer_ref == uuid.UUID(transfer_ref)
    assert note.occurred_at == datetime(2026, 11, 22, 1, 59, 58, 250000, tzinfo=UTC)
    assert delivery is not None
    assert (delivery.state, delivery.attempts, delivery.event_type) == (
        "processed",
        1,
        "TRANSACTION_COMPLETED",
    )
    assert delivery.body == body
    assert transfer.transfer_ref == uuid.UUID(transfer_ref)
    assert (transfer.origin, transfer.is_terminal, transfer.next_poll_at) == (
        "notified",
        False,
        NOW,
    )


def test_processing_again_changes_nothing(session_factory: sessionmaker[Session]) -> None:
    [pk] = store(session_factory, ("evt-b", payload("evt-b", str(uuid.uuid4()))))
    process(session_factory, [pk])
    assert process(session_factory, [pk, pk]).processed == []
    with transaction(session_factory) as session:
        reset_for_replay(session, pk)
    assert process(session_factory, [pk]).processed == [pk]
    with session_factory() as session:
        assert len(session.scalars(select(Notification)).all()) == 1
        assert len(session.scalars(select(Transfer)).all()) == 1


def test_two_workers_with_the_same_deliveries_make_one_notification_each(
    session_factory: sessionmaker[Session],
) -> None:
    pks = store(
        session_factory,
        *((f"evt-c{i}", payload(f"evt-c{i}", str(uuid.uuid4()))) for i in range(20)),
    )
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            process(session_factory, pks)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with session_factory() as session:
        notes = session.scalars(select(Notification.delivery_pk)).all()
    assert sorted(notes) == sorted(pks)


def test_an_unreadable_delivery_is_quarantined_with_its_reason_and_bytes(
    session_factory: sessionmaker[Session],
) -> None:
    bad = payload("evt-d", None, amount="12.345")
    [pk] = store(session_factory, ("evt-d", bad))
    outcome = process(session_factory, [pk])
    assert outcome.quarantined == [pk]
    with session_factory() as session:
        delivery = session.get(Delivery, pk)
        assert session.scalars(select(Notification)).all() == []
    assert delivery is not None
    assert delivery.state == "quarantined"
    assert delivery.error is not None and "more decimal places than NGN allows" in delivery.error
    assert hashlib.sha256(delivery.body).hexdigest() == hashlib.sha256(bad).hexdigest()


def test_a_named_transfer_waiting_in_backoff_is_polled_sooner(
    session_factory: sessionmaker[Session],
) -> None:
    waiting, done = uuid.uuid4(), uuid.uuid4()
    later = NOW + timedelta(minutes=5)
    with transaction(session_factory) as session:
        session.add(Transfer(transfer_ref=waiting, origin="created", next_poll_at=later))
        session.add(
            Transfer(transfer_ref=done, origin="created", is_terminal=True, next_poll_at=None)
        )
    pks = store(
        session_factory,
        ("evt-e", payload("evt-e", str(waiting))),
        ("evt-f", payload("evt-f", str(done))),
    )
    process(session_factory, pks)
    with session_factory() as session:
        rows = session.execute(select(Transfer.transfer_ref, Transfer.next_poll_at)).all()
    polls = dict(rows)
    assert polls == {waiting: NOW, done: None}
