"""Handing a committed batch's outcomes back to the requests that wait for them."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from app.receiver.batches import Resolver, Waiting
from reconciliation.notifications import InboundDelivery, Outcome, Recorded
from reconciliation.store import utcnow


def delivery(number: int) -> InboundDelivery:
    return InboundDelivery(
        delivery_id=f"d{number}",
        body=b"{}",
        headers={},
        scheme="standard",
        event_type=None,
        received_at=utcnow(),
    )


class LoopThread:
    """An event loop running in a thread of its own, as a second web worker's would."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def future(self) -> asyncio.Future[Recorded]:
        made: list[asyncio.Future[Recorded]] = []
        ready = threading.Event()

        def make() -> None:
            made.append(self.loop.create_future())
            ready.set()

        self.loop.call_soon_threadsafe(make)
        ready.wait(5)
        return made[0]

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


def settled(futures: list[asyncio.Future[Recorded]]) -> list[Recorded]:
    deadline = time.monotonic() + 5
    while not all(f.done() for f in futures):
        assert time.monotonic() < deadline, "outcomes never arrived"
        time.sleep(0.01)
    return [f.result() for f in futures]


@pytest.mark.parametrize("loops", [1, 2])
def test_each_request_hears_its_own_outcome_from_any_loop(loops: int) -> None:
    threads = [LoopThread() for _ in range(loops)]
    handed_on: list[list[int]] = []
    try:
        batch = [
            Waiting(delivery(n), (t := threads[n % loops]).future(), t.loop, time.perf_counter())
            for n in range(6)
        ]
        results = [
            Recorded(Outcome.ACCEPTED, 100 + n) if n != 3 else Recorded(Outcome.DUPLICATE, None)
            for n in range(6)
        ]
        Resolver(handed_on.append).committed(batch, results)
        assert settled([w.future for w in batch]) == results
        assert handed_on == [[100, 101, 102, 104, 105]]
    finally:
        for thread in threads:
            thread.close()


def test_outcomes_that_do_not_match_the_batch_resolve_nothing() -> None:
    thread = LoopThread()
    try:
        waiting = Waiting(delivery(1), thread.future(), thread.loop, time.perf_counter())
        with pytest.raises(ValueError, match="1 outcomes for a batch of 2"):
            Resolver(None).committed([waiting, waiting], [Recorded(Outcome.ACCEPTED, 1)])
        assert not waiting.future.done()
    finally:
        thread.close()
