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

from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.notifications.inbox_access import reset_for_replay
from reconciliation.notifications.processing import process_deliveries
from reconciliation.postings import PRIORITY_SIGNALLED, PRIORITY_SILENT
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Delivery, Notification, Transfer
from tests.integration.reconciliation.builders import Store
from workers import Runtime
from workers.actors.inbox import process_delivery

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
    """Invariant 4: processing the same deliveries a second time changes nothing in the store."""
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
    """Invariant 4: two workers given the same deliveries at once make one notification of each."""
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
    assert sorted(pk or 0 for pk in notes) == sorted(pks)


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
    """Invariant 12: a notification naming a transfer of ours makes its status read due now, ahead
    of its backoff."""
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


def test_a_large_mixed_batch_is_written_set_wise_and_each_delivery_counted_once(
    session_factory: sessionmaker[Session],
) -> None:
    """A re-send batch (hundreds of rows) mixing every case processing meets: readable bodies,
    unreadable ones, one already processed, a second body under a known id replayed beside the
    first, and transfers named twice."""
    shared_transfer = str(uuid.uuid4())
    bodies = []
    for n in range(600):
        amount = f"{n + 1}.{n % 100:02d}"
        transfer = shared_transfer if n % 200 == 0 else str(uuid.uuid4())
        bodies.append((f"evt-m{n}", payload(f"evt-m{n}", transfer, amount=amount)))
    unreadable = {17, 411}
    for n in unreadable:
        bodies[n] = (f"evt-m{n}", payload(f"evt-m{n}", None, amount="1.234"))
    pks = store(session_factory, *bodies)
    process(session_factory, [pks[5]])  # done before: skipped, not counted again
    # Another body under a known id is stored quarantined; replayed, it joins the batch.
    [other] = store(session_factory, ("evt-m9", payload("evt-m9", None, amount="9.99")))
    with transaction(session_factory) as session:
        reset_for_replay(session, other)

    outcome = process(session_factory, [*pks, other, pks[3]])

    readable = [pk for n, pk in enumerate(pks) if n not in unreadable and n != 5]
    assert outcome.processed == readable
    assert sorted(outcome.quarantined) == sorted([pks[17], pks[411], other])
    with session_factory() as session:
        notes = {n.delivery_pk or 0: n for n in session.scalars(select(Notification)).all()}
        rows = {d.id: d for d in session.scalars(select(Delivery)).all()}
        transfers = session.scalars(select(Transfer.transfer_ref)).all()
    assert sorted(notes) == sorted([*readable, pks[5]])
    for n, pk in enumerate(pks):
        if n in unreadable:
            continue
        note = notes[pk]
        assert (note.event_id, note.amount_minor) == (f"evt-m{n}", (n + 1) * 100 + n % 100)
        assert (note.match_status, note.payload_shape, note.created_at) == (
            "unmatched",
            "recon",
            NOW,
        )
        assert note.occurred_at == datetime(2026, 11, 22, 1, 59, 58, 250000, tzinfo=UTC)
        delivery = rows[pk]
        assert (delivery.state, delivery.event_type, delivery.processed_at) == (
            "processed",
            "TRANSACTION_COMPLETED",
            NOW,
        )
    # Every claimed row counted one attempt, whatever became of it; the bytes set aside stay.
    assert {rows[pk].attempts for pk in pks} == {1}
    assert rows[other].attempts == 1
    assert rows[other].state == "quarantined" and "already processed" in (rows[other].error or "")
    assert rows[pks[17]].body == bodies[17][1]
    assert "more decimal places" in (rows[pks[411]].error or "")
    assert len(transfers) == len(set(transfers)) == 600 - 2 - 2  # unreadable, shared thrice


def test_a_body_whose_text_no_database_can_store_is_set_aside_not_the_batch(
    session_factory: sessionmaker[Session],
) -> None:
    """JSON can spell a lone surrogate (`\\ud800`), which neither database stores: written, it
    failed its whole batch on every retry and re-send, holding back every delivery beside it."""
    doc = json.loads(payload("evt-s", str(uuid.uuid4())))
    doc["data"]["narration"] = "paid \ud800 twice"
    unstorable = json.dumps(doc).encode()  # ASCII bytes: the escape stays an escape
    pks = store(
        session_factory,
        ("evt-r", payload("evt-r", str(uuid.uuid4()))),
        ("evt-s", unstorable),
        ("evt-t", payload("evt-t", str(uuid.uuid4()))),
    )
    outcome = process(session_factory, pks)
    assert (outcome.processed, outcome.quarantined) == ([pks[0], pks[2]], [pks[1]])
    with session_factory() as session:
        notes = session.scalars(select(Notification.event_id)).all()
        set_aside = session.get(Delivery, pks[1])
    assert sorted(notes) == ["evt-r", "evt-t"]
    assert set_aside is not None and set_aside.state == "quarantined"
    assert "narration holds a lone surrogate" in (set_aside.error or "")
    assert set_aside.body == unstorable


def test_a_delivery_naming_a_holding_only_by_its_account_number_makes_its_read_due(
    runtime: Runtime,
) -> None:
    """Invariant 12: a notification that names its holding only by the bank account number (no
    holdingRef, no endpointRef) makes that holding's read due at once, as a named ref does;
    a holding with another number keeps its quiet schedule."""
    built = Store(runtime.sessions)
    named, bystander = built.holding(), built.holding()
    later = runtime.clock() + timedelta(hours=1)
    with transaction(runtime.sessions) as session:
        for holding in (named, bystander):
            session.add(
                ActivityCursor(
                    holding_id=holding.id, next_poll_at=later, due_priority=PRIORITY_SILENT
                )
            )
    doc = json.loads(payload("evt-number", None))
    doc["data"] |= {"holdingRef": None, "endpointRef": None, "accountRef": None}
    doc["data"]["accountNumber"] = built.numbers[named.id]
    pks = store(runtime.sessions, ("evt-number", json.dumps(doc).encode()))
    process_delivery.fn(pks)
    with runtime.sessions() as session:
        cursors = {
            holding_id: (signalled, priority)
            for holding_id, signalled, priority in session.execute(
                select(
                    ActivityCursor.holding_id,
                    ActivityCursor.signalled_at,
                    ActivityCursor.due_priority,
                )
            )
        }
        [state] = session.scalars(select(Delivery.state).where(Delivery.id.in_(pks)))
    assert state == "processed"
    signalled, priority = cursors[named.id]
    assert signalled is not None and priority == PRIORITY_SIGNALLED
    assert cursors[bystander.id] == (None, PRIORITY_SILENT)
