"""Deliveries whose amounts or fields the store cannot hold never hold back their batch.

Before: a delivery whose amount did not fit 64 bits failed its batch's statement
(`OverflowError` on SQLite, `NumericValueOutOfRange` on PostgreSQL), so it and every delivery
batched with it stayed pending and were re-sent by every sweep. Now an amount of any size up
to 78 digits is stored exactly; one longer is quarantined with the reason at reading; and a row
the store still refuses is set aside alone, with the store's reason, while the rest of the
batch is processed.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.notifications.processing import process_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.models import Delivery, Notification
from upstream import PayloadReader, configured_reader

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)


def body(event_id: str, amount: str, *, account_number: str = "0123456789") -> bytes:
    """A Standard Webhooks body carrying `amount` minor units of NGN."""
    doc: dict[str, Any] = {
        "id": event_id,
        "type": "PAYMENT_RECEIVED",
        "timestamp": "2026-11-22T01:59:58.250Z",
        "data": {
            "transferRef": None,
            "receiptRef": str(uuid.uuid4()),
            "accountRef": str(uuid.uuid4()),
            "endpointRef": str(uuid.uuid4()),
            "holdingRef": str(uuid.uuid4()),
            "accountNumber": account_number,
            "bankCode": "000",
            "amountMinorUnits": amount,
            "currency": "NGN",
            "status": "SUCCESSFUL",
            "narration": "t",
        },
    }
    return json.dumps(doc).encode()


def store(factory: sessionmaker[Session], bodies: dict[str, bytes]) -> dict[str, int]:
    with transaction(factory) as session:
        recorded = record_deliveries(
            session.connection(),
            [
                InboundDelivery(
                    delivery_id=event_id,
                    body=raw,
                    headers={"webhook-id": event_id},
                    scheme="standard",
                    event_type=None,
                    received_at=NOW - timedelta(seconds=5),
                )
                for event_id, raw in bodies.items()
            ],
        )
    ids = [r.row_id for r in recorded]
    assert all(i is not None for i in ids)
    return {event_id: int(i) for event_id, i in zip(bodies, ids, strict=True) if i is not None}


def states(factory: sessionmaker[Session]) -> dict[str, tuple[str, str | None, bytes]]:
    with factory() as session:
        return {
            d.delivery_id: (d.state, d.error, d.body) for d in session.scalars(select(Delivery))
        }


def test_an_amount_of_ten_to_the_thirty_is_stored_exactly(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 5: an amount of 10^30 base units is stored and read back exactly, past any 64-bit
    integer."""
    pks = store(session_factory, {"evt-big": body("evt-big", str(10**30 + 1))})
    with transaction(session_factory) as session:
        outcome = process_deliveries(session, list(pks.values()), NOW)
    assert outcome.processed == [pks["evt-big"]]
    with session_factory() as session:
        [amount] = session.scalars(select(Notification.amount_minor)).all()
    assert amount == 1_000_000_000_000_000_000_000_000_000_001


def test_an_amount_past_78_digits_is_quarantined_and_its_batch_processed(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 10: one unreadable amount is set aside alone; its batch-mates are processed."""
    too_long = "9" * 79
    bodies = {
        "evt-1": body("evt-1", "150050"),
        "evt-huge": body("evt-huge", too_long),
        "evt-2": body("evt-2", str(10**40)),
    }
    pks = store(session_factory, bodies)
    with transaction(session_factory) as session:
        outcome = process_deliveries(session, sorted(pks.values()), NOW)
    assert sorted(outcome.processed) == sorted([pks["evt-1"], pks["evt-2"]])
    assert outcome.quarantined == [pks["evt-huge"]]
    found = states(session_factory)
    assert found["evt-1"][0] == found["evt-2"][0] == "processed"
    state, error, kept = found["evt-huge"]
    assert state == "quarantined"
    assert "79 digits" in (error or "") and "at most 78" in (error or "")
    assert kept == bodies["evt-huge"]


#: A store that refuses one row, whatever the reason: a trigger on each database.
_REFUSE: Final = {
    "sqlite": [
        "CREATE TRIGGER refuse_one BEFORE INSERT ON notifications "
        "WHEN NEW.event_id = 'evt-refused' BEGIN SELECT RAISE(ABORT, 'row refused'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_one() RETURNS trigger AS $$ BEGIN "
        "IF NEW.event_id = 'evt-refused' THEN RAISE EXCEPTION 'row refused'; END IF; "
        "RETURN NEW; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER refuse_one BEFORE INSERT ON notifications "
        "FOR EACH ROW EXECUTE FUNCTION refuse_one()",
    ],
}
_UNDO: Final = {
    "sqlite": ["DROP TRIGGER refuse_one"],
    "postgresql": ["DROP TRIGGER refuse_one ON notifications", "DROP FUNCTION refuse_one()"],
}


@pytest.fixture
def refusing_store(session_factory: sessionmaker[Session]) -> Iterator[None]:
    """The trigger for this test only (the PostgreSQL database outlives one test)."""
    with transaction(session_factory) as session:
        dialect = session.get_bind().dialect.name
        for statement in _REFUSE[dialect]:
            session.execute(text(statement))
    yield
    with transaction(session_factory) as session:
        for statement in _UNDO[dialect]:
            session.execute(text(statement))


@pytest.mark.usefixtures("refusing_store")
def test_a_row_the_store_refuses_is_set_aside_alone_with_the_reason(
    session_factory: sessionmaker[Session],
) -> None:
    bodies = {
        "evt-a": body("evt-a", "100"),
        "evt-refused": body("evt-refused", "200"),
        "evt-b": body("evt-b", "300"),
    }
    pks = store(session_factory, bodies)
    with transaction(session_factory) as session:
        outcome = process_deliveries(session, sorted(pks.values()), NOW)
    assert outcome.quarantined == [pks["evt-refused"]]
    found = states(session_factory)
    assert found["evt-a"][0] == found["evt-b"][0] == "processed"
    state, error, kept = found["evt-refused"]
    assert state == "quarantined"
    assert "the store refused its notification" in (error or "") and "row refused" in (error or "")
    assert kept == bodies["evt-refused"]
    with session_factory() as session:
        amounts = sorted(session.scalars(select(Notification.amount_minor)).all())
    assert amounts == [100, 300]


def _raw_recon_body(
    event_id: str, amount: bytes, created_at: bytes = b'"2026-11-22T01:59:58Z"'
) -> bytes:
    """A body in our first-guess shape with `amount` and `createdAt` written as raw JSON."""
    return (
        b'{"id":"'
        + event_id.encode()
        + b'","event":"PAYMENT_RECEIVED","createdAt":'
        + created_at
        + b',"data":{"amount":'
        + amount
        + b',"currency":"NGN","status":"SUCCESSFUL"}}'
    )


def _raw_flat_body(event_id: str, created_at: bytes) -> bytes:
    """A flat body (epoch-millis timestamps) whose `createdAt` is raw JSON."""
    return (
        b'{"id":"'
        + event_id.encode()
        + b'","eventType":"PAYMENT_RECEIVED","createdAt":'
        + created_at
        + b',"amount":"1.00","currency":"NGN","status":"SUCCESSFUL"}'
    )


#: Longest error a quarantined delivery may carry: the cause and an excerpt, never an expansion.
SHORT_ERROR: Final = 2_000


def test_numbers_that_expand_to_gigabytes_are_quarantined_cheaply_and_their_batch_processed(
    session_factory: sessionmaker[Session],
) -> None:
    """Before: an amount of 1e999999999999 raised MemoryError while the reader wrote it out,
    failing the batch and every retry of it (its genuine batch-mates stayed pending); 1e5000000
    stored 5 MB of error text; a createdAt of 1e500000 held the interpreter for a minute."""
    bodies = {
        "evt-good-1": body("evt-good-1", "150050"),
        "evt-trillion": _raw_recon_body("evt-trillion", b"1e999999999999"),
        "evt-million": _raw_recon_body("evt-million", b"1e5000000"),
        "evt-tiny": _raw_recon_body("evt-tiny", b"1e-999999999"),
        "evt-time": _raw_flat_body("evt-time", b"1e500000"),
        "evt-good-2": body("evt-good-2", "300"),
    }
    pks = store(session_factory, bodies)
    started = time.monotonic()
    with transaction(session_factory) as session:
        outcome = process_deliveries(session, sorted(pks.values()), NOW)
    assert time.monotonic() - started < 10
    assert sorted(outcome.processed) == sorted([pks["evt-good-1"], pks["evt-good-2"]])
    found = states(session_factory)
    for event_id in ("evt-trillion", "evt-million", "evt-tiny", "evt-time"):
        state, error, kept = found[event_id]
        assert state == "quarantined", (event_id, state)
        assert error is not None and len(error) < SHORT_ERROR, (event_id, len(error or ""))
        assert "out of range" in error or "is not a time" in error, error
        assert kept == bodies[event_id]


class _ReaderThatBreaks(PayloadReader):
    """The configured reader, except that reading a body with `evt-breaks` in it raises: what
    any failure recon did not foresee (MemoryError, RecursionError) does."""

    def read(self, body: bytes, headers: Any) -> Any:
        if b"evt-breaks" in body:
            raise RecursionError("maximum recursion depth exceeded " + "x" * 100_000)
        return super().read(body, headers)


def test_a_reading_that_raises_quarantines_its_delivery_alone(
    session_factory: sessionmaker[Session],
) -> None:
    """Before: an exception while reading one delivery failed the batch, and every retry of
    it, so its batch-mates stayed pending with no error shown."""
    bodies = {
        "evt-a": body("evt-a", "100"),
        "evt-breaks": body("evt-breaks", "200"),
        "evt-b": body("evt-b", "300"),
    }
    pks = store(session_factory, bodies)
    reader = _ReaderThatBreaks(configured_reader().adapters)
    with transaction(session_factory) as session:
        outcome = process_deliveries(session, sorted(pks.values()), NOW, reader)
    assert outcome.quarantined == [pks["evt-breaks"]]
    found = states(session_factory)
    assert found["evt-a"][0] == found["evt-b"][0] == "processed"
    state, error, kept = found["evt-breaks"]
    assert state == "quarantined" and kept == bodies["evt-breaks"]
    assert error is not None and error.startswith("reading the body failed: RecursionError")
    assert len(error) < SHORT_ERROR
