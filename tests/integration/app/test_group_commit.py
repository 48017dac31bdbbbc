"""The group-commit writer on both databases: batches, failure isolation, shutdown."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app import metrics
from app.receiver.group_commit import GroupCommitWriter, InboxUnavailableError
from reconciliation.notifications.inbox import InboundDelivery, Outcome, Recorded
from reconciliation.store.types import utcnow
from tests.conftest import postgres_only
from tests.integration.app.receiver_helpers import stored

T = TypeVar("T")


def delivery(event_type: str = "PAYMENT_RECEIVED") -> InboundDelivery:
    delivery_id = str(uuid.uuid4())
    return InboundDelivery(
        delivery_id=delivery_id,
        body=b'{"id":"%s"}' % delivery_id.encode(),
        headers={},
        scheme="standard",
        event_type=event_type,
        received_at=utcnow(),
    )


@pytest.fixture
def committed() -> list[int]:
    return []


def run_with_writer(
    engine: Engine, committed: list[int], scenario: Callable[[GroupCommitWriter], Awaitable[T]]
) -> T:
    """Start a writer in a fresh event loop, run the scenario, stop the writer."""

    async def main() -> T:
        writer = GroupCommitWriter(engine, on_committed=committed.extend)
        await writer.start()
        try:
            return await scenario(writer)
        finally:
            await writer.stop()

    return asyncio.run(main())


def batches() -> float:
    return metrics.REGISTRY.get_sample_value("recon_webhook_commit_batch_size_count") or 0.0


def commit_waits() -> float:
    return metrics.REGISTRY.get_sample_value("recon_webhook_commit_wait_seconds_count") or 0.0


def test_concurrent_writes_share_commits(
    engine: Engine, session_factory: sessionmaker[Session], committed: list[int]
) -> None:
    before, waits_before = batches(), commit_waits()

    async def burst(writer: GroupCommitWriter) -> list[Recorded]:
        return await asyncio.gather(*(writer.write(delivery()) for _ in range(40)))

    results = run_with_writer(engine, committed, burst)
    assert all(r.outcome is Outcome.ACCEPTED for r in results)
    assert len(stored(session_factory)) == 40
    assert batches() - before < 40 / 4  # far fewer transactions than deliveries
    assert commit_waits() - waits_before == 40  # one wait per delivery, observed per batch
    assert sorted(committed) == sorted(r.row_id for r in results if r.row_id)


@postgres_only  # SQLite does not enforce VARCHAR lengths
def test_a_row_the_database_refuses_fails_alone(
    engine: Engine, session_factory: sessionmaker[Session], committed: list[int]
) -> None:

    async def mixed(writer: GroupCommitWriter) -> list[Recorded | BaseException]:
        # event_type is VARCHAR(64): the intake never sends longer, so this stands in for any
        # row the database refuses.
        writes = [
            writer.write(delivery("E" * 65 if i == 3 else "PAYMENT_RECEIVED")) for i in range(8)
        ]
        return await asyncio.gather(*writes, return_exceptions=True)

    results = run_with_writer(engine, committed, mixed)
    assert isinstance(results[3], InboxUnavailableError)
    assert [isinstance(r, Recorded) for r in results].count(True) == 7
    assert len(stored(session_factory)) == 7


def test_stop_commits_what_is_queued_then_refuses(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    async def write_then_stop() -> list[Recorded]:
        writer = GroupCommitWriter(engine, on_committed=None)
        await writer.start()
        pending = [asyncio.ensure_future(writer.write(delivery())) for _ in range(10)]
        await asyncio.sleep(0)  # every write is gathered, none handed over yet
        await writer.stop()
        results = await asyncio.gather(*pending)
        with pytest.raises(InboxUnavailableError, match="not running"):
            await writer.write(delivery())
        return results

    assert len(asyncio.run(write_then_stop())) == 10
    assert len(stored(session_factory)) == 10
