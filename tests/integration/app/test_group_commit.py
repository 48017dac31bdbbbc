"""The group-commit writer on both databases: batches, failure isolation, shutdown."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app import metrics
from app.receiver.group_commit import GroupCommitWriter, InboxUnavailableError
from reconciliation.inbox import InboundDelivery, Outcome, Recorded
from reconciliation.store.types import utcnow
from tests.integration.app.receiver_helpers import stored


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


@pytest.fixture
def writer(engine: Engine, committed: list[int]) -> Iterator[GroupCommitWriter]:
    w = GroupCommitWriter(engine, on_committed=committed.extend)
    w.start()
    yield w
    w.stop()


def batches() -> float:
    return metrics.REGISTRY.get_sample_value("recon_webhook_commit_batch_size_count") or 0.0


def test_concurrent_writes_share_commits(
    writer: GroupCommitWriter, session_factory: sessionmaker[Session], committed: list[int]
) -> None:
    before = batches()

    async def burst() -> list[Recorded]:
        return await asyncio.gather(*(writer.write(delivery()) for _ in range(40)))

    results = asyncio.run(burst())
    assert all(r.outcome is Outcome.ACCEPTED for r in results)
    assert len(stored(session_factory)) == 40
    assert batches() - before < 40 / 4  # far fewer transactions than deliveries
    assert sorted(committed) == sorted(r.row_id for r in results if r.row_id)


@pytest.mark.postgres
def test_a_row_the_database_refuses_fails_alone(
    writer: GroupCommitWriter, session_factory: sessionmaker[Session], db_url: str
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite does not enforce VARCHAR lengths")

    async def mixed() -> list[Recorded | BaseException]:
        # event_type is VARCHAR(64): the intake never sends longer, so this stands in for any
        # row the database refuses.
        writes = [
            writer.write(delivery("E" * 65 if i == 3 else "PAYMENT_RECEIVED")) for i in range(8)
        ]
        return await asyncio.gather(*writes, return_exceptions=True)

    results = asyncio.run(mixed())
    assert isinstance(results[3], InboxUnavailableError)
    assert [isinstance(r, Recorded) for r in results].count(True) == 7
    assert len(stored(session_factory)) == 7


def test_stop_commits_what_is_queued_then_refuses(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    w = GroupCommitWriter(engine, on_committed=None)
    w.start()

    async def write_then_stop() -> list[Recorded]:
        pending = [asyncio.ensure_future(w.write(delivery())) for _ in range(10)]
        await asyncio.sleep(0)  # every write is queued
        await asyncio.to_thread(w.stop)
        return await asyncio.gather(*pending)

    assert len(asyncio.run(write_then_stop())) == 10
    assert len(stored(session_factory)) == 10
    with pytest.raises(InboxUnavailableError, match="not running"):
        asyncio.run(w.write(delivery()))
