"""The receiver's deadlines: one timer per loop must still cut off exactly the late waits."""

from __future__ import annotations

import asyncio

import pytest

from app.receiver.deadlines import TaskDeadlines


async def _wait(deadlines: TaskDeadlines, seconds: float) -> str:
    token = deadlines.arm()
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if not deadlines.expired(token):
            raise
        # The task goes on after its deadline (it answers the sender): it must not be cancelled.
        await asyncio.sleep(0)
        return "expired"
    finally:
        deadlines.disarm(token)
    return "done"


def test_only_the_waits_past_their_deadline_are_cut_off() -> None:
    async def main() -> list[str]:
        deadlines = TaskDeadlines(0.2)
        waits = [_wait(deadlines, s) for s in (0.01, 5, 0.05, 5)]
        return list(await asyncio.gather(*waits))

    assert asyncio.run(main()) == ["done", "expired", "done", "expired"]


def test_a_deadline_counts_from_when_it_was_armed() -> None:
    async def main() -> tuple[str, str, float]:
        deadlines = TaskDeadlines(0.3)
        loop = asyncio.get_running_loop()
        first = asyncio.ensure_future(_wait(deadlines, 5))
        await asyncio.sleep(0.2)
        started = loop.time()
        second = asyncio.ensure_future(_wait(deadlines, 5))
        one = await first
        two = await second
        return one, two, loop.time() - started

    one, two, waited = asyncio.run(main())
    # Both cut off (each would wait 5 s), the second no sooner than its own 0.3 s after it
    # was armed, not with the first, armed 0.2 s before it.
    assert (one, two) == ("expired", "expired")
    assert waited >= 0.28, waited


def test_another_cancellation_is_not_taken_for_the_deadline() -> None:
    async def main() -> None:
        deadlines = TaskDeadlines(5)
        task = asyncio.ensure_future(_wait(deadlines, 5))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
