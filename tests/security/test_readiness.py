"""What /ready, /health/parts and the admin API say while a part is down, and what the
receiver does while the inbox is locked.

Before: /ready stayed 200 with the SQLite store deleted (its open connections wrote into the
deleted file) or the deliveries table locked (nothing committed, every delivery waited as long
as the lock), and answered 503 with Redis down although deliveries were committed and
acknowledged; the admin API answered 500 while the database was down; the enqueue failure
counter never counted, and a Redis outage wrote a warning per batch.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from reconciliation.store.db import make_engine
from tests.integration.app.receiver_helpers import ADMIN, PATH, event_body, signed_headers, wait_for
from tests.integration.workers.private_redis import PrivateRedis
from tests.security.conftest import WebProcess


def _deliver(web: WebProcess, delivery_id: str | None = None) -> httpx.Response:
    delivery_id = delivery_id or str(uuid.uuid4())
    body = event_body(event_id=delivery_id)
    return httpx.post(
        web.base + PATH,
        content=body,
        headers=signed_headers(body, delivery_id=delivery_id),
        timeout=60,
    )


def test_ready_is_503_once_the_sqlite_store_is_deleted(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env, "--no-workers")
    assert httpx.get(f"{web.base}/ready", timeout=30).status_code == 200
    assert _deliver(web).status_code == 200
    Path(security_env["DATABASE_URL"].removeprefix("sqlite:///")).unlink()
    ready = httpx.get(f"{web.base}/ready", timeout=30)
    assert ready.status_code == 503
    assert ready.json()["store"] == "not writable (the store file is gone)"


@pytest.mark.postgres
def test_the_admin_api_answers_503_not_500_while_the_database_is_down(
    security_env: dict[str, str],
    switchable_postgres: tuple[str, Callable[[bool], None]],
    web_process: Callable[..., WebProcess],
) -> None:
    url, available = switchable_postgres
    web = web_process({**security_env, "DATABASE_URL": url})
    assert httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30).status_code == 200
    available(False)
    try:
        response = httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=60)
        assert response.status_code == 503, response.text
        assert response.json()["error"] == "store_unavailable"
        assert response.headers["retry-after"] == "5"
        assert httpx.get(f"{web.base}/ready", timeout=60).status_code == 503
    finally:
        available(True)
    wait_for(
        lambda: httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30).status_code == 200,
        30,
        "the admin API to answer again",
    )


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_locked_inbox_makes_deliveries_503_within_the_bound_and_ready_503(
    security_env: dict[str, str], db_url: str, web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(
        {**security_env, "DATABASE_URL": db_url, "RECON_WEBHOOK_COMMIT_TIMEOUT_SECONDS": "2"}
    )
    assert _deliver(web).status_code == 200
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        engine = make_engine(db_url)
        try:
            with engine.connect() as conn, conn.begin():
                conn.execute(text("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE"))
                locked.set()
                release.wait(60)
        finally:
            engine.dispose()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(30)
        refused = _deliver(web, "evt_during_lock")
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "5"
        # Answered while the lock was still held: the commit gave up, it did not wait it out.
        assert holder.is_alive()
        ready = httpx.get(f"{web.base}/ready", timeout=30)
        assert ready.status_code == 503
        assert ready.json()["store"].startswith("not writable")
    finally:
        release.set()
        holder.join(30)
    # The provider retries; once the lock is gone the delivery is stored (exactly once).
    wait_for(lambda: _deliver(web, "evt_during_lock").status_code == 200, 30, "the retry")
    assert httpx.get(f"{web.base}/ready", timeout=30).status_code == 200


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_redis_outage_keeps_ready_and_is_counted_and_logged_once(
    security_env: dict[str, str],
    db_url: str,
    private_redis: PrivateRedis,
    web_process: Callable[..., WebProcess],
) -> None:
    web = web_process({**security_env, "DATABASE_URL": db_url, "REDIS_URL": private_redis.url})
    assert _deliver(web).status_code == 200
    private_redis.stop()
    try:
        # Deliveries are committed and acknowledged without Redis: this process is ready.
        assert httpx.get(f"{web.base}/ready", timeout=30).status_code == 200
        parts = httpx.get(f"{web.base}/health/parts", timeout=30)
        assert parts.status_code == 503
        assert parts.json()["broker"].startswith("unavailable")
        assert [_deliver(web).status_code for _ in range(30)] == [200] * 30

        def failures() -> float:
            for line in httpx.get(f"{web.base}/metrics", timeout=30).text.splitlines():
                if line.startswith("recon_webhook_enqueue_failures_total "):
                    return float(line.split()[1])
            return 0.0

        wait_for(lambda: failures() >= 1, 60, "the enqueue failures to be counted")
    finally:
        private_redis.start()
    wait_for(lambda: _deliver(web).status_code == 200 and _recovered(web), 60, "recovery")
    events = [json.loads(line).get("event") for line in web.log_text().splitlines() if line]
    assert events.count("inbox.enqueue_failed") == 1
    assert events.count("inbox.enqueue_recovered") == 1


def _recovered(web: WebProcess) -> bool:
    return '"inbox.enqueue_recovered"' in web.log_text()
