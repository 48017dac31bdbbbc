"""The sweep's re-send rounds: every lost delivery sent once per round, in chunks, never again
while it waits in the queue; a round that is old sends what is still pending once more."""

from __future__ import annotations

from datetime import timedelta

from dramatiq import Message
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from reconciliation.notifications.processing import (
    advance_resend_mark,
    pending_deliveries,
    read_resend_mark,
)
from reconciliation.store.db import transaction
from tests.integration.workers.test_inbox_processing import NOW, payload, process, store
from workers import build_runtime, install_broker, release_runtime
from workers.actors.sweep import resend_lost_deliveries
from workers.dispatch import RESEND_BATCH
from workers.queues import INBOX

ROUND = timedelta(seconds=120)


def sweep_once(factory: sessionmaker[Session], seconds: float, chunk: int) -> list[int]:
    """What one sweep at NOW + seconds sends, chunk after chunk, as workers.actors.sweep does."""
    now = NOW + timedelta(seconds=seconds)
    sent: list[int] = []
    while True:
        with transaction(factory) as session:
            mark = read_resend_mark(session, now, ROUND)
            stale = pending_deliveries(session, now, chunk, after_id=mark.through)
        if not stale:
            return sent
        with transaction(factory) as session:
            advance_resend_mark(session, mark, max(stale), now)
        sent += stale


def test_each_lost_delivery_is_sent_once_a_round(session_factory: sessionmaker[Session]) -> None:
    pks = store(session_factory, *((f"evt-{n}", payload(f"evt-{n}", None)) for n in range(7)))
    process(session_factory, [pks[2]])  # processed before the outage: never re-sent

    first = sweep_once(session_factory, 1, chunk=3)
    assert first == [pk for pk in pks if pk != pks[2]]  # all of them, in chunks, in id order

    # Still waiting in the queue: later sweeps of the round send nothing again ...
    assert sweep_once(session_factory, 30, chunk=3) == []
    # ... except what arrived since.
    [late] = store(session_factory, ("evt-late", payload("evt-late", None)))
    assert sweep_once(session_factory, 60, chunk=3) == [late]

    # The workers got some of them; the rest were lost again: the next round sends those once.
    process(session_factory, first[:4])
    second = sweep_once(session_factory, 1 + ROUND.total_seconds(), chunk=3)
    assert second == [*first[4:], late]
    assert sweep_once(session_factory, 2 + ROUND.total_seconds(), chunk=3) == []


def test_a_chunk_the_broker_refused_is_sent_by_the_next_sweep(
    session_factory: sessionmaker[Session],
) -> None:
    pks = store(session_factory, *((f"evt-{n}", payload(f"evt-{n}", None)) for n in range(3)))
    with transaction(session_factory) as session:
        mark = read_resend_mark(session, NOW, ROUND)
        assert pending_deliveries(session, NOW, 10, after_id=mark.through) == pks
        # Sending failed (Redis down): the sweep does not move the mark.
    assert sweep_once(session_factory, 5, chunk=10) == pks


def test_a_sweep_re_sends_lost_deliveries_in_large_batches_each_once(
    base_env: dict[str, str], db_url: str, session_factory: sessionmaker[Session]
) -> None:
    """Invariant 4: After an outage the sweep hands the workers RESEND_BATCH rows a message, not the
    receiver's small batches: fewer messages, statements and commits for the same drain."""
    count = 2 * RESEND_BATCH + 7
    pks = store(session_factory, *((f"evt-{n}", payload(f"evt-{n}", None)) for n in range(count)))
    process(session_factory, pks[:3])  # processed before the outage: not re-sent
    broker = install_broker(None)
    rt = build_runtime(load_settings({**base_env, "DATABASE_URL": db_url}))
    try:
        sent = resend_lost_deliveries(rt, NOW + timedelta(minutes=5))
        messages = []
        while broker.queues[INBOX].qsize():
            messages.append(Message.decode(broker.queues[INBOX].get()))
    finally:
        release_runtime(rt)
        install_broker(None)
    batches = [m.args[0] for m in messages]
    assert [m.actor_name for m in messages] == ["process_delivery"] * len(messages)
    assert [len(b) for b in batches] == [RESEND_BATCH, RESEND_BATCH, count - 3 - 2 * RESEND_BATCH]
    assert sent == count - 3
    assert [pk for batch in batches for pk in batch] == pks[3:]
