"""One scheduler at a time (store lease or Redis lock), and one gateway rate for all workers."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.integration.workers.private_redis import PrivateRedis
from tests.waiting import wait_until
from workers import RedisSchedulerLock, TickScheduler
from workers.gateway_rate_limit import RateLimitedTransport, build_limiter
from workers.scheduler import Tick
from workers.scheduler_lock import SchedulerLock, StoreSchedulerLock


def test_the_store_lease_admits_one_scheduler_until_it_stops_renewing(
    session_factory: sessionmaker[Session],
) -> None:
    first = StoreSchedulerLock(session_factory, "scheduler-a", seconds=1.0)
    second = StoreSchedulerLock(session_factory, "scheduler-b", seconds=1.0)
    assert first.hold()
    assert not second.hold()
    assert first.hold()  # renewal
    # First stops renewing: second takes over once the lease has run out, and not before.
    renewed = time.monotonic()
    wait_until(second.hold, seconds=10, what="the second scheduler to take the lease")
    assert time.monotonic() - renewed >= 0.9
    assert not first.hold()
    second.release()
    assert first.hold()  # released: no need to wait for the expiry


@pytest.mark.redis
def test_the_redis_lock_admits_one_scheduler_until_it_stops_renewing(
    private_redis: PrivateRedis,
) -> None:
    first = RedisSchedulerLock(private_redis.url, "scheduler-a", seconds=1.0)
    second = RedisSchedulerLock(private_redis.url, "scheduler-b", seconds=1.0)
    try:
        assert first.hold()
        assert not second.hold()
        assert first.hold()
        renewed = time.monotonic()
        wait_until(second.hold, seconds=10, what="the second scheduler to take the lock")
        assert time.monotonic() - renewed >= 0.9
        assert not first.hold()
    finally:
        second.release()
        first.release()


#: Ticks each scheduler sends (every 0.1 s) before the test moves on.
TICKS_EACH = 5


def run_two_schedulers(
    make_lock: Callable[[str], SchedulerLock],
) -> tuple[Counter[str], Counter[str]]:
    """Two schedulers on one lock; the active one stops halfway. Ticks sent, before and after."""
    sent: Counter[str] = Counter()
    lock = threading.Lock()

    def sender(name: str) -> Callable[[], None]:
        def send() -> None:
            with lock:
                sent[name] += 1

        return send

    schedulers = {
        name: TickScheduler([Tick("tick", 0.1, sender(name))], make_lock(name), lock_seconds=1.0)
        for name in ("a", "b")
    }
    for scheduler in schedulers.values():
        scheduler.start()
    [first] = wait_until(
        lambda: [n for n, s in schedulers.items() if s.active and sent[n] >= TICKS_EACH],
        what="one scheduler sending ticks",
    )
    assert [name for name, s in schedulers.items() if s.active] == [first]
    with lock:
        before = Counter(sent)
    schedulers[first].stop()
    standby = next(name for name in schedulers if name != first)
    wait_until(
        lambda: schedulers[standby].active and sent[standby] >= TICKS_EACH,
        what="the standby to take over and send ticks",
    )
    schedulers[standby].stop()
    after = sent - before
    assert set(before) == {first}
    assert set(after) == {standby}
    return before, after


def test_only_the_scheduler_holding_the_store_lease_sends_ticks(
    session_factory: sessionmaker[Session],
) -> None:
    before, after = run_two_schedulers(lambda name: StoreSchedulerLock(session_factory, name, 1.0))
    assert sum(before.values()) >= 5 and sum(after.values()) >= 5


@pytest.mark.redis
def test_only_the_scheduler_holding_the_redis_lock_sends_ticks(
    private_redis: PrivateRedis,
) -> None:
    before, after = run_two_schedulers(
        lambda name: RedisSchedulerLock(private_redis.url, name, 1.0)
    )
    assert sum(before.values()) >= 5 and sum(after.values()) >= 5


@pytest.mark.redis
def test_all_workers_together_stay_under_the_configured_rate(
    private_redis: PrivateRedis,
) -> None:
    sent_at: list[float] = []
    lock = threading.Lock()

    def gateway(request: httpx.Request) -> httpx.Response:
        with lock:
            sent_at.append(time.time())
        return httpx.Response(200, json={})

    # Two "worker processes": separate limiters and transports, one Redis.
    transports = [
        RateLimitedTransport(httpx.MockTransport(gateway), build_limiter(private_redis.url, 10))
        for _ in range(2)
    ]

    def worker(transport: RateLimitedTransport) -> None:
        with httpx.Client(transport=transport, base_url="http://gateway") as client:
            for _ in range(10):
                client.get("/v1/environment")

    threads = [threading.Thread(target=worker, args=(t,)) for t in transports for _ in range(2)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    per_second = Counter(int(t) for t in sent_at)
    assert len(sent_at) == 40
    # A request is stamped when it reaches the gateway, a moment after the limiter let it go:
    # on a loaded machine the four threads' last permits of one window can land in the next
    # wall-clock second. The rate itself is the elapsed time: 40 at 10/s need four windows.
    assert max(per_second.values()) <= 10 + len(threads), per_second
    assert elapsed >= 2.0  # four full windows of 10; the first may be cut short
