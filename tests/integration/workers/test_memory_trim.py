"""MemoryTrim: after a message on the worker's own broker, freed memory goes back to the system.

The actor allocates ~100 MB in malloc-sized pieces, then a small object above them that pins
the heap's top (so glibc cannot give the space back by itself, as it does when the top of a heap
is free), and frees the rest: without a trim the RSS stays at the peak, with one it falls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dramatiq
import pytest
from dramatiq import Broker, Worker
from dramatiq.brokers.stub import StubBroker

from tests.integration.workers.private_redis import PrivateRedis
from workers import REGISTRY, install_broker
from workers.broker import boot
from workers.middleware.memory_trim import MemoryTrim, can_trim

pytestmark = pytest.mark.skipif(not can_trim(), reason="the C library has no malloc_trim")

#: Pieces allocated and freed by the message: 1 KiB each is above Python's small-object limit
#: (512 bytes), so each is a malloc of its own, and far below glibc's mmap threshold, so none is
#: unmapped on free.
PIECES = 100_000
PIECE_BYTES = 1024
ALLOCATED_MB = PIECES * PIECE_BYTES / 2**20


def rss_mb() -> float:
    """This process's resident set, in MB."""
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def trims() -> float:
    """Trims done so far in this process, as /metrics shows them."""
    return sum(
        REGISTRY.get_sample_value("recon_worker_memory_trims_total", {"released": released}) or 0.0
        for released in ("yes", "no")
    )


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the middleware did not run in time"
        time.sleep(0.02)


@pytest.fixture(params=["in-process", "redis"])
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The worker's broker as `install_broker` builds it, with its own middleware stack."""
    redis_url = None
    if request.param == "redis":
        server: PrivateRedis = request.getfixturevalue("private_redis")
        redis_url = server.url
    try:
        yield install_broker(redis_url)
    finally:
        install_broker(None)


def test_a_message_that_freed_a_peak_gives_it_back(broker: Broker) -> None:
    pinned: list[bytes] = []
    peak: list[float] = []

    # A name of this broker's own: a broker installed later takes over every declared actor.
    name = f"peak_and_free_{type(broker).__name__}"

    @dramatiq.actor(actor_name=name, queue_name="test_memory_trim", max_retries=0, broker=broker)
    def peak_and_free() -> None:
        held = [bytes(PIECE_BYTES) for _ in range(PIECES)]
        pinned.append(bytes(PIECE_BYTES))  # above the pieces: the heap's top stays in use
        peak.append(rss_mb())
        del held

    boot(broker)
    worker = Worker(broker, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        before = trims()
        peak_and_free.send()
        wait_for(lambda: trims() > before)
        after = rss_mb()
    finally:
        worker.stop()
    assert len(peak) == 1
    # Without the trim the RSS stays at the peak (the pieces' pages are kept by malloc).
    assert after < peak[0] - ALLOCATED_MB / 2, (peak[0], after)


def test_short_messages_trim_once_per_interval() -> None:
    """A stream of short messages costs one trim per interval, not one per message."""
    broker = StubBroker(middleware=[MemoryTrim(interval=60.0)])
    broker.emit_after("process_boot")

    @dramatiq.actor(queue_name="test_memory_trim_short", broker=broker)
    def short() -> None:
        pass

    worker = Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        before = trims()
        for _ in range(20):
            short.send()
        broker.join("test_memory_trim_short", timeout=10_000)
        worker.join()
    finally:
        worker.stop()
        broker.close()
    assert trims() == before + 1
