"""The broker: installed before actors, per-actor retry limits, middleware that runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import structlog
from dramatiq import Worker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker

from upstream.errors import Forbidden, InvalidInput, Unauthorized
from workers import actors, install_broker
from workers.broker import boot
from workers.middleware.metrics import MESSAGES

GATEWAY_ACTORS = (
    actors.poll_activity,
    actors.poll_signalled_activity,
    actors.poll_transfers,
    actors.snapshot_balances,
    actors.discover_holdings,
    actors.check_subscription,
)
ALL_ACTORS = (
    *GATEWAY_ACTORS,
    actors.process_delivery,
    actors.enqueue_activity_polls,
    actors.sweep,
    actors.reconcile,
)


@pytest.fixture
def stub_broker() -> Iterator[StubBroker]:
    broker = install_broker(None)
    assert isinstance(broker, StubBroker)
    yield broker
    install_broker(None)


def test_installing_a_broker_moves_every_declared_actor_onto_it() -> None:
    first = install_broker(None)
    second = install_broker("redis://127.0.0.1:6379/15")
    try:
        assert isinstance(second, RedisBroker)
        assert dramatiq.get_broker() is second
        for actor in ALL_ACTORS:
            assert actor.broker is second
            assert actor.actor_name in second.actors
            assert actor.queue_name in second.get_declared_queues()
        assert first is not second
    finally:
        install_broker(None)


def test_no_actor_retries_for_days_by_accident() -> None:
    for actor in ALL_ACTORS:
        assert actor.options.get("max_retries", 3) <= 5, actor.actor_name
        assert actor.options.get("max_backoff", 60_000) <= 60_000, actor.actor_name
        assert "time_limit" in actor.options, actor.actor_name


def test_gateway_actors_do_not_retry_what_retrying_cannot_fix() -> None:
    for actor in GATEWAY_ACTORS:
        throws = actor.options["throws"]
        for error in (Unauthorized, Forbidden, InvalidInput):
            assert issubclass(error, throws), (actor.actor_name, error)


def test_messages_run_with_their_id_as_correlation_id(stub_broker: StubBroker) -> None:
    seen: list[dict[str, Any]] = []

    @dramatiq.actor(queue_name="test_context", max_retries=0)
    def remember() -> None:
        seen.append(dict(structlog.contextvars.get_contextvars()))

    boot(stub_broker)
    worker = Worker(stub_broker, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        before = MESSAGES.labels("remember", "done")._value.get()
        message = remember.send()
        stub_broker.join("test_context", timeout=5_000)
        worker.join()
    finally:
        worker.stop()
    assert seen == [
        {
            "correlation_id": message.message_id,
            "actor": "remember",
            "queue": "test_context",
            "retries": 0,
        }
    ]
    assert structlog.contextvars.get_contextvars() == {}
    assert MESSAGES.labels("remember", "done")._value.get() == before + 1


def test_time_limit_stops_a_message_that_runs_too_long(stub_broker: StubBroker) -> None:
    outcome: list[str] = []

    @dramatiq.actor(queue_name="test_limit", max_retries=0, time_limit=200)
    def forever() -> None:
        import time

        try:
            for _ in range(500):
                time.sleep(0.01)
            outcome.append("finished")
        except BaseException as exc:
            outcome.append(type(exc).__name__)
            raise

    boot(stub_broker)
    worker = Worker(stub_broker, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        forever.send()
        stub_broker.join("test_limit", timeout=10_000, fail_fast=False)
    finally:
        worker.stop()
    assert outcome == ["TimeLimitExceeded"]
