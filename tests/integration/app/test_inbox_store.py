"""The inbox's store side on both databases: batches, dedup, conflicts, paging, replay."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.notifications import inbox, inbox_access
from reconciliation.notifications.inbox import InboundDelivery, Outcome
from reconciliation.store.models import Alert, Delivery
from reconciliation.store.types import utcnow
from tests.conftest import postgres_only


def delivery(delivery_id: str, body: bytes = b'{"event":"X"}', **extra: object) -> InboundDelivery:
    return InboundDelivery(
        delivery_id=delivery_id,
        body=body,
        headers={"webhook-id": delivery_id},
        scheme="standard",
        event_type=str(extra.pop("event_type", "PAYMENT_RECEIVED")),
        received_at=utcnow(),
        quarantine_reason=extra.pop("quarantine_reason", None),  # type: ignore[arg-type]
    )


def record(engine: Engine, *deliveries: InboundDelivery) -> list[inbox.Recorded]:
    with engine.begin() as connection:
        return inbox.record_deliveries(connection, deliveries)


def rows(factory: sessionmaker[Session]) -> list[Delivery]:
    with factory() as session:
        return list(session.scalars(select(Delivery).order_by(Delivery.id)))


def test_batch_outcomes_in_order(engine: Engine, session_factory: sessionmaker[Session]) -> None:
    results = record(
        engine,
        delivery("a"),
        delivery("b"),
        delivery("a"),
        delivery("a", b'{"event":"Y"}'),
        delivery("c", b"not json", quarantine_reason="body is not valid JSON"),
    )
    assert [r.outcome for r in results] == [
        Outcome.ACCEPTED,
        Outcome.ACCEPTED,
        Outcome.DUPLICATE,
        Outcome.CONFLICT,
        Outcome.QUARANTINED,
    ]
    by_id = {r.id: r for r in rows(session_factory)}
    assert len(by_id) == 4
    accepted_a, accepted_b, _, conflict_a, broken_c = (
        by_id[r.row_id] if r.row_id else None for r in results
    )
    assert accepted_a is not None and accepted_b is not None
    assert conflict_a is not None and broken_c is not None
    assert (accepted_a.delivery_id, accepted_a.state, accepted_a.original) == ("a", "pending", True)
    assert (accepted_b.delivery_id, accepted_b.state) == ("b", "pending")
    assert (conflict_a.delivery_id, conflict_a.state, conflict_a.original) == (
        "a",
        "quarantined",
        False,
    )
    assert conflict_a.error == inbox.BODY_CONFLICT_REASON
    assert (broken_c.state, broken_c.error, broken_c.original) == (
        "quarantined",
        "body is not valid JSON",
        True,
    )


def test_stored_rows_read_back_exactly(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    body = bytes(range(256))  # every byte value survives the trip
    sent = delivery("exact", body)
    record(engine, sent)
    [row] = rows(session_factory)
    assert row.body == body
    assert row.body_sha256 == sent.body_sha256
    assert row.headers == {"webhook-id": "exact"}
    assert row.received_at == sent.received_at
    assert (row.scheme, row.event_type, row.attempts, row.error) == (
        "standard",
        "PAYMENT_RECEIVED",
        0,
        None,
    )


def test_later_batches_see_earlier_ones(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    record(engine, delivery("a"), delivery("b"))
    results = record(engine, delivery("a"), delivery("b", b'{"event":"other"}'), delivery("c"))
    assert [r.outcome for r in results] == [Outcome.DUPLICATE, Outcome.CONFLICT, Outcome.ACCEPTED]
    assert len(rows(session_factory)) == 4


def test_conflict_raises_one_alert_per_delivery_id(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    record(engine, delivery("a"))
    record(engine, delivery("a", b'{"v":2}'))
    record(engine, delivery("a", b'{"v":3}'))
    with session_factory() as session:
        [alert] = session.scalars(select(Alert)).all()
    assert alert.kind == inbox.BODY_CONFLICT_ALERT
    assert alert.occurrences == 2
    assert alert.severity == "high"
    assert "a was re-sent with a different body" in alert.subject
    assert len(alert.evidence["earlier_rows"]) == 2


def test_failed_batch_leaves_nothing_behind(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    with pytest.raises(RuntimeError), engine.begin() as connection:
        inbox.record_deliveries(connection, [delivery("a"), delivery("b")])
        raise RuntimeError("the commit never happens")
    assert rows(session_factory) == []
    assert [r.outcome for r in record(engine, delivery("a"))] == [Outcome.ACCEPTED]


@postgres_only  # SQLite serialises writers: the race exists only on PostgreSQL
def test_concurrent_batches_with_one_id_and_two_bodies_detect_the_conflict(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    """Two writers (threads or web processes) racing on one id: the second one sees the first."""

    def write(
        delivery_id: str, body: bytes, barrier: threading.Barrier, out: list[Outcome]
    ) -> None:
        with engine.begin() as connection:
            barrier.wait()
            out.extend(
                r.outcome
                for r in inbox.record_deliveries(connection, [delivery(delivery_id, body)])
            )

    for attempt in range(10):
        barrier = threading.Barrier(2)
        outcomes: list[Outcome] = []
        threads = [
            threading.Thread(target=write, args=(f"race-{attempt}", body, barrier, outcomes))
            for body in (b'{"v":1}', b'{"v":2}')
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(o.value for o in outcomes) == ["accepted", "conflict"]


def test_listing_filters_and_pages_newest_first(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    record(
        engine,
        *(delivery(f"p{i}", event_type="PAYMENT_RECEIVED") for i in range(5)),
        *(delivery(f"k{i}", event_type="KYC_VERIFIED") for i in range(3)),
        delivery("q", b"x", quarantine_reason="broken", event_type="ACCOUNT_CREATED"),
    )
    with session_factory() as session:
        first = inbox_access.list_deliveries(session, event_type="PAYMENT_RECEIVED", limit=2)
        second = inbox_access.list_deliveries(
            session, event_type="PAYMENT_RECEIVED", limit=2, cursor=first.next_cursor
        )
        third = inbox_access.list_deliveries(
            session, event_type="PAYMENT_RECEIVED", limit=2, cursor=second.next_cursor
        )
        quarantined = inbox_access.list_deliveries(session, state="quarantined")
    assert [d.delivery_id for d in first.items + second.items + third.items] == [
        "p4",
        "p3",
        "p2",
        "p1",
        "p0",
    ]
    assert third.next_cursor is None
    assert [d.delivery_id for d in quarantined.items] == ["q"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: inbox_access.list_deliveries(s, state="done"), "state 'done' is not valid"),
        (lambda s: inbox_access.list_deliveries(s, cursor="abc"), "cursor 'abc' is not valid"),
        (lambda s: inbox_access.list_deliveries(s, limit=0), "limit 0 is not valid"),
    ],
)
def test_bad_listing_requests_say_what_is_wrong(
    session_factory: sessionmaker[Session], call: Callable[[Session], object], message: str
) -> None:
    with session_factory() as session, pytest.raises(ValueError, match=message):
        call(session)


def test_replay_resets_a_processed_delivery(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    [result] = record(engine, delivery("a"))
    assert result.row_id is not None
    with session_factory() as session, session.begin():
        row = session.get(Delivery, result.row_id)
        assert row is not None
        row.state, row.attempts, row.error, row.processed_at = "processed", 3, "old", utcnow()
    with session_factory() as session, session.begin():
        inbox_access.reset_for_replay(session, result.row_id)
    [row] = rows(session_factory)
    assert (row.state, row.attempts, row.error, row.processed_at) == ("pending", 0, None, None)
    with (
        session_factory() as session,
        pytest.raises(LookupError, match="no delivery with row id 999"),
    ):
        inbox_access.reset_for_replay(session, 999)


def test_inbox_depth_counts_waiting_and_set_aside(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    record(engine, delivery("a"), delivery("b"), delivery("c", b"x", quarantine_reason="broken"))
    with session_factory() as session:
        assert inbox_access.inbox_depth(session) == {"pending": 2, "quarantined": 1}


def test_find_by_delivery_id_hashes_overlong_ids(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    long_id = "x" * 400
    record(engine, delivery(inbox.stored_delivery_id(long_id)))
    with session_factory() as session:
        [row] = inbox_access.find_by_delivery_id(session, long_id)
    assert row.delivery_id.startswith("sha256:")


def test_unique_ids_keep_their_order_in_a_large_batch(engine: Engine) -> None:
    ids = [str(uuid.uuid4()) for _ in range(300)]
    results = record(engine, *(delivery(i) for i in ids))
    assert all(r.outcome is Outcome.ACCEPTED for r in results)
    assert [r.row_id for r in results] == sorted(r.row_id for r in results)  # type: ignore[type-var]
