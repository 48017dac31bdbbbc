"""Workers as real processes on a private Redis: killed, doubled, and cut off from Redis.

- A worker killed with SIGKILL at random points of a catch-up, 20 times, and restarted: the
  store ends with exactly the sandbox's postings, no gap, no duplicate.
- Two worker processes handed the same holdings many times over never read one holding at once.
- Redis stopped for a while (every queued message lost, as with a Redis without persistence):
  nothing is lost when it returns; the store says what is still to do and the sweep re-sends it.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from foundation import load_settings
from sandbox.bulk import build_bulk
from sandbox.faults import Fault
from sandbox.server import SandboxServer
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.ledger_compare import assert_store_matches, stored_count
from tests.integration.workers.private_redis import PrivateRedis
from tests.integration.workers.sandbox_probe import RequestProbe
from tests.integration.workers.scenario import differences, move_money, prepare, wait_until_agreed
from tests.integration.workers.worker_processes import spawn, stop_all, tail_logs, wait_started
from workers import build_runtime, install_broker, release_runtime
from workers.queues import POLLING

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

#: Postings of the kill test: 20 holdings, page size 50, so 420 pages to read.
TOTAL = 20_000
#: Each kill comes once the worker has stored up to this many more postings (about three pages).
KILL_AFTER_POSTINGS = 150


def process_env(
    sandbox_env: dict[str, str], postgres_db_url: str, redis: PrivateRedis, **overrides: str
) -> dict[str, str]:
    return {
        **sandbox_env,
        "DATABASE_URL": postgres_db_url,
        "REDIS_URL": redis.url,
        "RECON_DISCOVER_HOLDINGS_SECONDS": "3600",
        "RECON_POLL_ACTIVITY_SECONDS": "5",
        "RECON_SWEEP_SECONDS": "1",
        **overrides,
    }


def wait_for(condition: object, seconds: float, what: str, logs: Path) -> None:
    assert callable(condition)
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds}s\n{tail_logs(logs)}")
        time.sleep(0.2)


def test_a_worker_killed_twenty_times_mid_catch_up_leaves_the_exact_ledger(
    sandbox_env: dict[str, str],
    postgres_db_url: str,
    private_redis: PrivateRedis,
    sandbox: SandboxServer,
    tmp_path: Path,
) -> None:
    """Invariant 4: a worker killed twenty times mid catch-up, messages lost each time: the ledger
    ends exact."""
    build_bulk(sandbox.state, holdings=20, postings=TOTAL, seed=2024)
    env = process_env(
        sandbox_env,
        postgres_db_url,
        private_redis,
        RECON_GATEWAY_RPS="12",  # 420 pages take 35 s or more: the kills fall inside
        RECON_DISCOVER_HOLDINGS_SECONDS="2",
    )
    settings = load_settings(env)
    runtime = build_runtime(settings)
    rng = random.Random(20)
    log = tmp_path / "worker.log"
    scheduler = spawn(["scheduler", "--lock-seconds", "3"], env, tmp_path / "scheduler.log")
    worker_args = ["worker", "--threads", "4", "--lease-seconds", "2"]
    stored_at_kill: list[int] = []
    try:
        for round_ in range(20):
            started = log.read_text().count("worker.started") if log.exists() else 0
            worker = spawn(worker_args, env, log)
            wait_for(
                lambda n=started: log.read_text().count("worker.started") > n,  # type: ignore[misc]
                30,
                f"worker start in round {round_}",
                tmp_path,
            )
            # Killed at a random point of its progress: after a few more pages, mid the next.
            progress = stored_count(runtime.sessions) + rng.randint(1, KILL_AFTER_POSTINGS)
            wait_for(
                lambda goal=progress: stored_count(runtime.sessions) >= goal,  # type: ignore[misc]
                60,
                f"progress in round {round_}",
                tmp_path,
            )
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            stored_at_kill.append(stored_count(runtime.sessions))
            assert worker.returncode == -signal.SIGKILL, f"round {round_}"
        started = log.read_text().count("worker.started")
        survivor = spawn(worker_args, env, log)
        wait_for(
            lambda: log.read_text().count("worker.started") > started,
            30,
            "the last worker's start",
            tmp_path,
        )
        wait_for(
            lambda: stored_count(runtime.sessions) == TOTAL,
            120,
            "the catch-up after the last kill",
            tmp_path,
        )
        codes = stop_all([survivor, scheduler])
        assert assert_store_matches(sandbox.state, runtime.sessions) == TOTAL
    finally:
        stop_all([scheduler])
        release_runtime(runtime)
    assert codes == [0, 0]
    # The kills really fell inside the catch-up, not after it.
    assert all(0 < n < TOTAL for n in stored_at_kill[1:]), stored_at_kill


def test_two_workers_never_read_one_holding_at_once(
    sandbox_env: dict[str, str],
    postgres_db_url: str,
    private_redis: PrivateRedis,
    sandbox: SandboxServer,
    probe: RequestProbe,
    tmp_path: Path,
) -> None:
    refs = build_bulk(sandbox.state, holdings=4, postings=400, seed=8)
    # Slow reads make any overlap visible at the sandbox.
    sandbox.state.faults.add_route(
        Fault(target="GET /v1/balances/activity", kind="slow", seconds=0.05)
    )
    env = process_env(sandbox_env, postgres_db_url, private_redis)
    settings = load_settings(env)
    broker = install_broker(settings.broker.redis_url)
    runtime = build_runtime(settings)
    workers = [
        spawn(["worker", "--threads", "8"], env, tmp_path / f"worker-{i}.log") for i in range(2)
    ]
    try:
        wait_started([tmp_path / "worker-0.log", tmp_path / "worker-1.log"])
        from workers.actors import discover_holdings, poll_activity
        from workers.actors.holdings import discover

        discover_holdings.send()
        wait_for(lambda: len(discover(runtime).new_holdings) == 0, 30, "discovery", tmp_path)
        with runtime.sessions() as session:
            from sqlalchemy import select

            from reconciliation.store.models import Holding

            ids = list(session.scalars(select(Holding.id)))
        for _ in range(6):  # every holding asked for six times at once, on two processes
            for holding_id in ids:
                poll_activity.send(holding_id)
        wait_for(lambda: stored_count(runtime.sessions) == 400, 60, "the catch-up", tmp_path)
        # The duplicate messages still queued run too (each must find the holding leased).
        broker.join(POLLING, timeout=60_000)
        assert stop_all(workers) == [0, 0]
    finally:
        stop_all(workers)
        release_runtime(runtime)
        install_broker(None)
    assert assert_store_matches(sandbox.state, runtime.sessions) == 400
    assert probe.max_in_flight_per_holding == 1
    assert set(probe.activity_by_holding) == {r["holdingRef"] for r in refs}


def test_redis_stopped_for_a_while_loses_nothing(
    sandbox_env: dict[str, str],
    postgres_db_url: str,
    private_redis: PrivateRedis,
    sandbox: SandboxServer,
    probe: RequestProbe,
    tmp_path: Path,
) -> None:
    env = process_env(
        sandbox_env,
        postgres_db_url,
        private_redis,
        RECON_POLL_ACTIVITY_SECONDS="1",
        RECON_SNAPSHOT_BALANCES_SECONDS="1",
        RECON_POLL_TRANSFERS_SECONDS="0.3",
        RECON_DISCOVER_HOLDINGS_SECONDS="2",
    )
    settings = load_settings(env)
    install_broker(settings.broker.redis_url)
    runtime = build_runtime(settings)
    processes = [
        spawn(["worker", "--threads", "4"], env, tmp_path / "worker.log"),
        spawn(["scheduler", "--lock-seconds", "3"], env, tmp_path / "scheduler.log"),
    ]
    try:
        wait_started([tmp_path / "worker.log", tmp_path / "scheduler.log"])
        with inbox_receiver(runtime.sessions) as url:
            scenario = prepare(sandbox, url)
            wait_for(
                lambda: stored_count(runtime.sessions) == 330, 60, "the first catch-up", tmp_path
            )
            private_redis.stop()
            # While Redis is down: money moves, deliveries are stored but cannot be enqueued,
            # and every queued or in-flight message is gone for good (no persistence).
            with capture_logs() as logged:
                move_money(sandbox, scenario, runtime.sessions)
                wait_for(
                    lambda: any(e["event"] == "dispatch.enqueue_failed" for e in logged),
                    30,
                    "a delivery stored but not handed to the workers",
                    tmp_path,
                )
            private_redis.start()
            # The outage was real: deliveries arrived and could not be handed to the workers.
            assert any(e["event"] == "dispatch.enqueue_failed" for e in logged)
            try:
                wait_until_agreed(
                    lambda: differences(sandbox, probe, runtime.sessions, scenario), seconds=90
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{tail_logs(tmp_path)}") from None
        codes = stop_all(processes)
    finally:
        stop_all(processes)
        release_runtime(runtime)
        install_broker(None)
    assert codes == [0, 0]
