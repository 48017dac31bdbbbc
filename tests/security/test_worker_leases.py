"""Workers killed or stopped in the middle of a catch-up, as real processes on a private Redis.

Before: an activity lease lasted 60 s, so every worker killed mid-catch-up left its holdings
unread for about a minute; a stopped worker finished its whole message (up to 20 s of pages)
before giving its leases back. Now a lease lasts 15 s and is renewed while its reader lives,
and a stopping worker ends its read after the current page and releases the lease.
"""

from __future__ import annotations

import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from foundation import load_settings
from reconciliation.postings.activity import LEASE_SECONDS
from reconciliation.store.models import ActivityCursor
from reconciliation.store.types import utcnow
from sandbox.bulk import build_bulk
from sandbox.server import SandboxServer
from tests.integration.workers.ledger_compare import assert_store_matches, stored_count
from tests.integration.workers.private_redis import PrivateRedis
from tests.integration.workers.sandbox_probe import RequestProbe
from tests.integration.workers.worker_processes import spawn, stop_all, tail_logs
from workers import build_runtime, release_runtime

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

#: 8 holdings of 500 postings, 50 a page: 88 pages, read at 12 requests a second.
HOLDINGS, TOTAL, PAGE = 8, 4_000, 50


def _env(sandbox_env: dict[str, str], db: str, redis: PrivateRedis) -> dict[str, str]:
    return {
        **sandbox_env,
        "DATABASE_URL": db,
        "REDIS_URL": redis.url,
        "RECON_GATEWAY_RPS": "12",
        "RECON_DISCOVER_HOLDINGS_SECONDS": "2",
        "RECON_POLL_ACTIVITY_SECONDS": "5",
        "RECON_SWEEP_SECONDS": "1",
    }


def _wait(condition: object, seconds: float, what: str, logs: Path) -> float:
    assert callable(condition)
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"{what} did not happen within {seconds}s\n{tail_logs(logs)}")
        time.sleep(0.1)
    return time.monotonic() - started


def _leases(sessions: object) -> list[ActivityCursor]:
    assert callable(sessions)
    with sessions() as session:
        return list(
            session.scalars(select(ActivityCursor).where(ActivityCursor.lease_owner.is_not(None)))
        )


def test_a_killed_worker_holds_its_holdings_for_one_short_lease_only(
    sandbox_env: dict[str, str],
    postgres_db_url: str,
    private_redis: PrivateRedis,
    sandbox: SandboxServer,
    probe: RequestProbe,
    tmp_path: Path,
) -> None:
    build_bulk(sandbox.state, holdings=HOLDINGS, postings=TOTAL, seed=14)
    env = _env(sandbox_env, postgres_db_url, private_redis)
    runtime = build_runtime(load_settings(env))
    scheduler = spawn(["scheduler", "--lock-seconds", "3"], env, tmp_path / "scheduler.log")
    worker = spawn(["worker", "--threads", "4"], env, tmp_path / "worker-1.log")
    try:
        _wait(lambda: stored_count(runtime.sessions) > 500, 90, "a catch-up under way", tmp_path)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        killed_at = utcnow()
        held = _leases(runtime.sessions)
        assert held, "the kill fell after the catch-up"
        # No lease outlives its holder by more than one (short) lease period.
        longest = max(c.lease_expires_at for c in held if c.lease_expires_at) - killed_at
        assert longest <= timedelta(seconds=LEASE_SECONDS + 1), longest
        worker = spawn(["worker", "--threads", "4"], env, tmp_path / "worker-2.log")
        took = _wait(lambda: stored_count(runtime.sessions) == TOTAL, 120, "the catch-up", tmp_path)
        codes = stop_all([worker, scheduler])
        assert assert_store_matches(sandbox.state, runtime.sessions) == TOTAL
        requests = probe.count("GET /v1/balances/activity")
        pages_with_entries = TOTAL // 50
        # Requests per page with entries, with one kill in the catch-up (a page re-read after
        # the kill, one short last page per holding and read), plus the first ledger audit,
        # which starts as soon as the holdings are discovered and reads each ledger once more.
        print(  # the measurement the issue asks for, shown with -s
            f"catch-up resumed and finished {took:.1f} s after the restart; "
            f"{requests / pages_with_entries:.2f} requests per page with entries"
        )
        assert requests / pages_with_entries < 2.5
    finally:
        stop_all([worker, scheduler])
        release_runtime(runtime)
    assert codes == [0, 0]


def test_a_stopped_worker_gives_its_leases_back_at_once(
    sandbox_env: dict[str, str],
    postgres_db_url: str,
    private_redis: PrivateRedis,
    sandbox: SandboxServer,
    tmp_path: Path,
) -> None:
    build_bulk(sandbox.state, holdings=HOLDINGS, postings=TOTAL, seed=15)
    env = _env(sandbox_env, postgres_db_url, private_redis)
    runtime = build_runtime(load_settings(env))
    scheduler = spawn(["scheduler", "--lock-seconds", "3"], env, tmp_path / "scheduler.log")
    worker = spawn(["worker", "--threads", "4"], env, tmp_path / "worker.log")
    try:
        _wait(lambda: _leases(runtime.sessions), 90, "a lease to be taken", tmp_path)
        _wait(lambda: stored_count(runtime.sessions) > 200, 90, "pages stored", tmp_path)
        at_stop = stored_count(runtime.sessions)
        assert stop_all([worker]) == [0]
        assert _leases(runtime.sessions) == []
        stored = stored_count(runtime.sessions)
        assert stored < TOTAL, "the stop fell after the catch-up"
        # Each read ended after its page, not at the end of its 100-page message: at most a
        # page for each of the 4 threads (and one committing as the stop was asked) came after.
        assert stored - at_stop <= (4 + 1) * PAGE, (at_stop, stored)
    finally:
        stop_all([worker, scheduler])
        release_runtime(runtime)
