"""The whole worker side against the sandbox: in-process broker, and Redis with processes.

Deliveries become notifications, transfers reach their terminal status, postings and snapshots
arrive exactly once, with REDIS_URL unset (the embedded runner, on SQLite and PostgreSQL) and
set (`recon worker` x2 and `recon scheduler` as real processes on a private Redis).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation import load_settings
from sandbox.server import SandboxServer
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.private_redis import PrivateRedis
from tests.integration.workers.sandbox_probe import RequestProbe
from tests.integration.workers.scenario import differences, move_money, prepare, wait_until_agreed
from tests.integration.workers.worker_processes import spawn, stop_all, tail_logs, wait_started
from workers import build_runtime, install_broker, release_runtime, start_embedded

LIVELY = {
    "RECON_POLL_ACTIVITY_SECONDS": "1",
    "RECON_POLL_TRANSFERS_SECONDS": "0.3",
    "RECON_SNAPSHOT_BALANCES_SECONDS": "1",
    "RECON_SWEEP_SECONDS": "1",
    "RECON_DISCOVER_HOLDINGS_SECONDS": "3600",
}


def test_embedded_workers_reach_the_sandbox_story(
    worker_env: dict[str, str], sandbox: SandboxServer, probe: RequestProbe
) -> None:
    settings = load_settings({**worker_env, **LIVELY})
    embedded = start_embedded(settings, lock_seconds=3)
    try:
        sessions = embedded.running.runtime.sessions
        with inbox_receiver(sessions) as url:
            scenario = prepare(sandbox, url)
            # Discovery ran at start-up on an empty register; run it now that holdings exist.
            from workers.actors import discover_holdings

            discover_holdings.send()
            move_money(sandbox, scenario, sessions)
            wait_until_agreed(lambda: differences(sandbox, probe, sessions, scenario))
    finally:
        embedded.stop()
    assert probe.max_in_flight_per_holding == 1


@pytest.mark.redis
def test_worker_and_scheduler_processes_on_redis_reach_the_sandbox_story(
    worker_env: dict[str, str],
    sandbox: SandboxServer,
    probe: RequestProbe,
    private_redis: PrivateRedis,
    tmp_path: Path,
) -> None:
    env = {
        **worker_env,
        **LIVELY,
        "RECON_DISCOVER_HOLDINGS_SECONDS": "2",
        "REDIS_URL": private_redis.url,
    }
    settings = load_settings(env)
    install_broker(settings.broker.redis_url)  # the receiver stand-in sends to the same Redis
    runtime = build_runtime(settings)
    processes = [
        spawn(["worker", "--threads", "4"], env, tmp_path / "worker-1.log"),
        spawn(["worker", "--threads", "4"], env, tmp_path / "worker-2.log"),
        spawn(["scheduler", "--lock-seconds", "3"], env, tmp_path / "scheduler.log"),
    ]
    try:
        wait_started(sorted(tmp_path.glob("*.log")))
        with inbox_receiver(runtime.sessions) as url:
            scenario = prepare(sandbox, url)
            move_money(sandbox, scenario, runtime.sessions)
            try:
                wait_until_agreed(
                    lambda: differences(sandbox, probe, runtime.sessions, scenario), seconds=90
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{tail_logs(tmp_path)}") from None
    finally:
        codes = stop_all(processes)
        release_runtime(runtime)
        install_broker(None)
    assert codes == [0, 0, 0]
    assert probe.max_in_flight_per_holding == 1
