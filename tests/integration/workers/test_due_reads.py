"""Which holdings are read, and when: priorities, coalescing, backoff and the staleness ceiling.

Invariant 12: reads follow the money; no signal is ever dropped, only coalesced or deferred; cost
grows with activity, not with holdings. Everything runs on an injected clock (the reader's
StepClock, the claim's `now`), on SQLite and PostgreSQL, against the in-process sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from dramatiq import Message
from dramatiq.brokers.stub import StubBroker
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from reconciliation.postings import (
    PRIORITY_CATCH_UP,
    PRIORITY_SIGNALLED,
    PRIORITY_SILENT,
    claim_due_endpoints,
    claim_due_holdings,
    ensure_cursor_rows,
    quiet_interval,
    schedule_next_snapshots,
    signal_holdings,
)
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Holding
from sandbox.faults import Fault
from sandbox.variants import PRESETS
from tests.integration.reconciliation.builders import Store
from tests.integration.workers.inprocess_sandbox import (
    ACTIVITY_PATH,
    InProcessSandbox,
    StepClock,
    inprocess_sandbox,
    reader_settings,
)
from workers import Runtime, build_runtime, install_broker, release_runtime
from workers.actors.activity import read_activity, send_due_activity_polls
from workers.actors.holdings import discover
from workers.queues import INBOX, POLLING

NOW = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
REDO = timedelta(seconds=60)
BASE, CEILING = 15.0, 100.0


def test_the_quiet_wait_doubles_from_the_base_up_to_the_ceiling() -> None:
    waits = [quiet_interval(q, BASE, CEILING) for q in range(6)]
    assert waits == [15, 30, 60, 100, 100, 100]
    assert quiet_interval(10_000, BASE, CEILING) == CEILING  # no overflow, still the ceiling
    assert quiet_interval(3, BASE, 5.0) == BASE  # a ceiling below the base is the base


def _cursors(factory: sessionmaker[Session], count: int) -> list[int]:
    store = Store(factory)
    ids = [store.holding(locator=False).id for _ in range(count)]
    with transaction(factory) as session:
        ensure_cursor_rows(session, ids, NOW)
    return ids


def _set(factory: sessionmaker[Session], holding_id: int, **values: object) -> None:
    with transaction(factory) as session:
        session.execute(
            update(ActivityCursor).where(ActivityCursor.holding_id == holding_id).values(**values)
        )


def test_signalled_reads_come_first_then_catch_up_then_silent_within_the_budget(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 12: a signalled holding is read before silent ones that were due long before
    it, and the silent share of a tick's budget is capped: a round never fills the queue."""
    silent = _cursors(session_factory, 5)
    catch_up, signalled = _cursors(session_factory, 2)
    for offset, holding in enumerate(silent):
        _set(
            session_factory,
            holding,
            due_priority=PRIORITY_SILENT,
            next_poll_at=NOW - timedelta(hours=1, seconds=offset),
        )
    _set(session_factory, catch_up, due_priority=PRIORITY_CATCH_UP, next_poll_at=NOW)
    _set(session_factory, signalled, due_priority=PRIORITY_SILENT, next_poll_at=NOW + REDO)
    with transaction(session_factory) as session:
        signal_holdings(session, {signalled}, NOW)
    with transaction(session_factory) as session:
        first = claim_due_holdings(session, NOW, REDO, limit=4, silent_limit=2)
    assert [d.holding_id for d in first[:2]] == [signalled, catch_up]
    assert [d.priority for d in first] == [
        PRIORITY_SIGNALLED,
        PRIORITY_CATCH_UP,
        PRIORITY_SILENT,
        PRIORITY_SILENT,
    ]
    assert [d.holding_id for d in first[2:]] == [silent[4], silent[3]]  # oldest due first
    with transaction(session_factory) as session:
        rest = claim_due_holdings(session, NOW, REDO, limit=10)
    assert sorted(d.holding_id for d in rest) == sorted(silent[:3])  # the rest, next tick


def test_many_signals_for_one_holding_coalesce_into_one_claim(
    session_factory: sessionmaker[Session],
) -> None:
    [holding] = _cursors(session_factory, 1)
    _set(session_factory, holding, next_poll_at=NOW + timedelta(hours=1))
    for second in range(5):
        with transaction(session_factory) as session:
            signal_holdings(session, {holding, holding}, NOW + timedelta(seconds=second / 10))
    at = NOW + timedelta(seconds=1)
    with transaction(session_factory) as session:
        claimed = claim_due_holdings(session, at, REDO, holding_ids=[holding])
    with transaction(session_factory) as session:
        again = claim_due_holdings(session, at, REDO)
    assert [d.holding_id for d in claimed] == [holding]
    assert again == []  # sent once; the queued read answers every signal before it


class SignalDuringRead(httpx.BaseTransport):
    """The sandbox; when armed, a notification names the holding while its page is served."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.arm: tuple[sessionmaker[Session], int, StepClock] | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == ACTIVITY_PATH and self.arm is not None:
            factory, holding, clock = self.arm
            self.arm = None
            clock.advance(1)
            with transaction(factory) as session:
                signal_holdings(session, {holding}, clock())
        return self.inner.handle_request(request)


@pytest.fixture
def sandbox() -> Iterator[InProcessSandbox]:
    with inprocess_sandbox(PRESETS["sparse"]) as made:
        yield made


def _cursor(rt: Runtime, holding_id: int) -> ActivityCursor:
    with rt.sessions() as session:
        row = session.get(ActivityCursor, holding_id)
        assert row is not None
        session.expunge(row)
        return row


def _due_now(rt: Runtime, clock: StepClock) -> list[int]:
    with transaction(rt.sessions) as session:
        return [d.holding_id for d in claim_due_holdings(session, clock(), REDO)]


def test_a_quiet_holding_backs_off_to_the_ceiling_and_an_unnotified_posting_is_found_within_it(
    base_env: dict[str, str], db_url: str, sandbox: InProcessSandbox
) -> None:
    """Invariant 12: a dropped webhook's posting: nothing signals it, and the holding has been quiet for
    long, yet it is read (and the posting stored) by the ceiling."""
    clock = StepClock()
    ref = sandbox.new_holding()
    sandbox.add_postings(ref, [1] * 3, anywhere_in_ties=False)
    env = {
        **base_env,
        "DATABASE_URL": db_url,
        "RECON_POLL_ACTIVITY_SECONDS": str(BASE),
        "RECON_MAX_STALENESS_SECONDS": str(CEILING),
    }
    signals = SignalDuringRead(sandbox.transport)
    rt = build_runtime(reader_settings(env, 50), transport=signals, clock=clock)
    try:
        discover(rt)
        with rt.sessions() as session:
            [holding] = session.scalars(select(Holding.id)).all()
        assert read_activity(rt, holding).advanced
        assert sandbox.assert_stored(rt.sessions, [ref]) == 3
        first = _cursor(rt, holding)
        assert first.quiet_reads == 0 and first.balance_due_at == clock()  # the balance follows
        waits = []
        for _ in range(5):
            due_at = _cursor(rt, holding).next_poll_at
            assert due_at is not None
            waits.append((due_at - clock()).total_seconds())
            clock.now = due_at - timedelta(seconds=0.5)
            assert _due_now(rt, clock) == []  # not before its time
            clock.now = due_at
            assert _due_now(rt, clock) == [holding]
            read = read_activity(rt, holding)
            assert read.caught_up and not read.signalled_again
        assert waits == [15, 30, 60, 100, 100]

        sandbox.add_postings(ref, [5], anywhere_in_ties=False)  # its webhook never came
        due_at = _cursor(rt, holding).next_poll_at
        assert due_at is not None and due_at - clock() <= timedelta(seconds=CEILING)
        clock.now = due_at
        assert _due_now(rt, clock) == [holding]
        assert read_activity(rt, holding).advanced
        assert sandbox.assert_stored(rt.sessions, [ref]) == 4
        assert _cursor(rt, holding).quiet_reads == 0  # active again: read often again

        # A notification while the read is under way: the holding is due again at once,
        # first in line, and the next read is not refused as already answered.
        clock.advance(5)
        signals.arm = (rt.sessions, holding, clock)
        read = read_activity(rt, holding)
        assert read.caught_up and read.signalled_again  # its reader sends the next read now
        row = _cursor(rt, holding)
        assert row.due_priority == PRIORITY_SIGNALLED
        assert row.next_poll_at is not None and row.next_poll_at <= clock()
        assert _due_now(rt, clock) == [holding]
    finally:
        release_runtime(rt)


def _balance_due(factory: sessionmaker[Session], holding_id: int) -> datetime | None:
    with factory() as session:
        row = session.get(ActivityCursor, holding_id)
        assert row is not None
        return row.balance_due_at


def test_a_balance_snapshot_is_due_after_activity_and_at_the_ceiling_otherwise(
    session_factory: sessionmaker[Session],
) -> None:
    """Snapshots are chosen from the due index a slice at a time; after a snapshot the next is
    at the ceiling, unless a read stored postings after the balance was observed."""
    first, second = _cursors(session_factory, 2)  # new holdings: due at once
    with transaction(session_factory) as session:
        one = claim_due_endpoints(session, NOW, REDO, limit=1)
    with transaction(session_factory) as session:
        other = claim_due_endpoints(session, NOW, REDO, limit=5)
    with transaction(session_factory) as session:
        none = claim_due_endpoints(session, NOW, REDO, limit=5)
    assert [set(t.holding_ids.values()) for t in one + other] == [{first}, {second}]
    assert none == []

    ceiling = NOW + timedelta(seconds=CEILING)
    with transaction(session_factory) as session:
        schedule_next_snapshots(session, [first], NOW, ceiling)
    assert _balance_due(session_factory, first) == ceiling  # silent: at the ceiling

    # The second's balance was observed at NOW + 2, but a read stored postings at NOW + 5
    # (its release made the snapshot due then): that snapshot does not cover them.
    _set(session_factory, second, balance_due_at=NOW + timedelta(seconds=5))
    with transaction(session_factory) as session:
        schedule_next_snapshots(session, [second], NOW + timedelta(seconds=2), ceiling)
    assert _balance_due(session_factory, second) == NOW + timedelta(seconds=5)
    at = NOW + timedelta(seconds=6)
    with transaction(session_factory) as session:
        again = claim_due_endpoints(session, at, REDO, limit=5, holding_id=second)
    assert [set(t.holding_ids.values()) for t in again] == [{second}]


def test_a_signalled_read_goes_to_the_urgent_queue_ahead_of_the_silent_ones(
    base_env: dict[str, str], db_url: str, sandbox: InProcessSandbox
) -> None:
    """Invariant 12: a tick's silent reads can fill the polling queue; a read a signal made due
    is sent to the inbox's queue, first in a worker's line, so it never waits behind them."""
    broker = install_broker(None)
    assert isinstance(broker, StubBroker)
    settings = load_settings(
        {**base_env, "DATABASE_URL": db_url, "RECON_GATEWAY_URL": "http://sandbox.invalid"}
    )
    rt = build_runtime(settings, transport=sandbox.transport, clock=lambda: NOW)
    try:
        holdings = _cursors(rt.sessions, 6)
        with transaction(rt.sessions) as session:
            signal_holdings(session, set(holdings[:2]), NOW)
        assert send_due_activity_polls(rt) == 6
    finally:
        release_runtime(rt)
    urgent = [Message.decode(m) for m in broker.queues[INBOX].queue]
    bulk = [Message.decode(m) for m in broker.queues[POLLING].queue]
    assert sorted(m.args[0] for m in urgent) == sorted(holdings[:2])
    assert sorted(m.args[0] for m in bulk) == sorted(holdings[2:])
    assert {m.actor_name for m in urgent} == {"poll_signalled_activity"}


def test_a_429_shrinks_the_slice_each_tick_sends_to_the_rate_in_use(
    base_env: dict[str, str], db_url: str, sandbox: InProcessSandbox
) -> None:
    """A tick sends what the rate in use serves until the next tick, not what
    RECON_GATEWAY_RPS would: after the sandbox answers 429, half as many reads go out."""
    settings = load_settings(
        {
            **base_env,
            "DATABASE_URL": db_url,
            "RECON_GATEWAY_URL": "http://sandbox.invalid",
            "RECON_GATEWAY_RPS": "40",
            "RECON_POLL_ACTIVITY_SECONDS": "4",  # a tick a second: 40 reads a tick
        }
    )
    rt = build_runtime(settings, transport=sandbox.transport, clock=lambda: NOW)
    try:
        _cursors(rt.sessions, 100)  # new holdings: all due now
        before = send_due_activity_polls(rt)
        sandbox.state.faults.add_route(
            Fault(target="GET /v1/environment", kind="rate_limit_429", count=1, seconds=0)
        )
        rt.gateway.environment()  # answered 429 once (then retried): the rate in use halves
        after = send_due_activity_polls(rt)
    finally:
        release_runtime(rt)
    assert (before, after) == (40, 20)
