"""Several web processes on one PostgreSQL store, and the key that seals the webhook secret.

Before: every web process without RECON_SECRET_KEY invented its own key, on PostgreSQL too; a
second process (or a restart on an ephemeral disk) could not decrypt the stored webhook secret,
answered 401 to every genuine delivery, and /ready said 200 all along.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import func, select

from foundation import Secret, SecretBox
from reconciliation.notifications.subscriptions import store_secret
from reconciliation.store.db import make_engine, make_session_factory, transaction
from reconciliation.store.models import Delivery
from tests.integration.app.receiver_helpers import PATH, SECRET, event_body, signed_headers
from tests.security.conftest import WebProcess, run_recon

pytestmark = pytest.mark.postgres

on_postgres = pytest.mark.parametrize("db_url", ["postgres"], indirect=True)


def _seal_secret_in_store(db_url: str, key: str) -> None:
    """What registration does: the provider's signing secret, sealed with `key`, stored."""
    engine = make_engine(db_url)
    try:
        with transaction(make_session_factory(engine)) as session:
            store_secret(session, SecretBox((Secret(key),)), Secret(SECRET))
    finally:
        engine.dispose()


def _stored_ids(db_url: str) -> dict[str, int]:
    engine = make_engine(db_url)
    try:
        with make_session_factory(engine)() as session:
            rows = session.execute(
                select(Delivery.delivery_id, func.count()).group_by(Delivery.delivery_id)
            )
            return {str(delivery_id): int(count) for delivery_id, count in rows}
    finally:
        engine.dispose()


@on_postgres
def test_web_refuses_to_start_on_postgres_without_a_secret_key(
    security_env: dict[str, str], db_url: str, web_process: Callable[..., WebProcess]
) -> None:
    env = {**security_env, "DATABASE_URL": db_url}
    del env["RECON_SECRET_KEY"]
    web = web_process(env, expect_exit=True)
    assert web.popen.returncode == 2
    said = web.log_text()
    assert "RECON_SECRET_KEY is missing" in said
    assert "recon config generate-key" in said
    # The same for a command that would seal a secret (registration).
    result = run_recon(env, "webhooks", "register")
    assert result.returncode == 2
    assert "RECON_SECRET_KEY is missing" in result.stderr


@on_postgres
def test_two_web_processes_on_one_store_accept_the_same_genuine_deliveries(
    security_env: dict[str, str], db_url: str, web_process: Callable[..., WebProcess]
) -> None:
    key = Fernet.generate_key().decode()
    _seal_secret_in_store(db_url, key)
    env = {**security_env, "DATABASE_URL": db_url, "RECON_SECRET_KEY": key}
    del env["RECON_WEBHOOK_SECRETS"]  # the stored secret is the only one
    first, second = web_process(env), web_process(env)
    for web in (first, second):
        assert httpx.get(f"{web.base}/ready", timeout=10).status_code == 200

    ids = [f"evt_shared_{n}" for n in range(30)]

    def deliver(pair: tuple[WebProcess, str]) -> int:
        web, delivery_id = pair
        body = event_body(event_id=delivery_id)
        headers = signed_headers(body, delivery_id=delivery_id)
        return httpx.post(web.base + PATH, content=body, headers=headers, timeout=30).status_code

    # Every delivery goes to both processes, as a provider retrying through a balancer would.
    pairs = [(web, i) for i in ids for web in (first, second)]
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(deliver, pairs))
    assert statuses == [200] * len(pairs)
    assert _stored_ids(db_url) == dict.fromkeys(ids, 1)


@on_postgres
def test_a_key_that_cannot_open_the_stored_secret_stops_start_up(
    security_env: dict[str, str], db_url: str, web_process: Callable[..., WebProcess]
) -> None:
    _seal_secret_in_store(db_url, Fernet.generate_key().decode())
    env = {
        **security_env,
        "DATABASE_URL": db_url,
        "RECON_SECRET_KEY": Fernet.generate_key().decode(),
    }
    del env["RECON_WEBHOOK_SECRETS"]
    web = web_process(env, expect_exit=True)
    assert web.popen.returncode == 2
    assert "RECON_SECRET_KEY cannot decrypt 1 stored webhook secret(s)" in web.log_text()


def test_ready_is_503_while_the_receiver_holds_no_usable_secret(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    env = dict(security_env)
    del env["RECON_WEBHOOK_SECRETS"]  # and nothing registered (--no-register)
    web = web_process(env)
    ready = httpx.get(f"{web.base}/ready", timeout=10)
    assert ready.status_code == 503
    assert ready.json()["secret"].startswith("none yet")
    assert ready.json()["store"] == "ok"
