"""Self-registration against the sandbox's company API over real HTTP.

One ACTIVE webhook for our receiver, never two (across restarts and racing processes), with a
generated secret kept encrypted, a retry policy and a description; rotation keeps the old
secret for the overlap; start-up registration runs in the background and survives failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
import structlog
from litestar.testing import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from foundation import SecretBox, Settings, load_settings
from reconciliation.notifications import subscriptions
from reconciliation.notifications.registration import (
    RETRY_POLICY,
    ensure_registered,
    receiver_url,
    rotate_secret,
)
from reconciliation.notifications.registration import company_client as make_company_client
from reconciliation.store.db import transaction
from reconciliation.store.types import utcnow
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from tests.integration.app.receiver_helpers import PATH, event_body, signed_headers, wait_for
from tests.integration.app.sandbox_driver import SandboxDriver

ALL_EVENTS = {
    "TRANSACTION_COMPLETED",
    "TRANSACTION_FAILED",
    "ACCOUNT_CREATED",
    "KYC_VERIFIED",
    "PAYMENT_RECEIVED",
}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(SandboxConfig(run_background=False)) as server:
        yield server


@pytest.fixture
def provider(sandbox: SandboxServer) -> Iterator[SandboxDriver]:
    sandbox.state.reset()
    driver = SandboxDriver(sandbox.base_url)
    yield driver
    driver.close()


@pytest.fixture
def settings(recon_env: dict[str, str], sandbox: SandboxServer) -> Settings:
    return load_settings(
        {
            **recon_env,
            "RECON_COMPANY_URL": sandbox.base_url,
            "RECON_PUBLIC_URL": "https://recon.example.test",
            "RECON_WEBHOOK_ROTATION_OVERLAP_SECONDS": "3600",
        }
    )


def ensure(
    settings: Settings, factory: sessionmaker[Session], owner: str = "test", wait: float = 0.0
):  # type: ignore[no-untyped-def]
    with make_company_client(settings) as client:
        return ensure_registered(settings, factory, client, owner=owner, wait_seconds=wait)


def test_registers_once_with_secret_policy_and_description(
    settings: Settings,
    session_factory: sessionmaker[Session],
    provider: SandboxDriver,
    sandbox: SandboxServer,
) -> None:
    first = ensure(settings, session_factory)
    again = ensure(settings, session_factory)
    assert first.created and not again.created
    assert again.webhook_id == first.webhook_id
    [hook] = provider.webhooks()
    assert hook["url"] == "https://recon.example.test/webhooks/company"
    assert set(hook["eventTypes"]) == ALL_EVENTS
    assert hook["status"] == "ACTIVE"
    registered = sandbox.state.webhooks[first.webhook_id]
    assert registered.description == "recon webhook receiver"
    assert registered.retry_policy == RETRY_POLICY.to_wire()
    assert registered.secret.startswith("whsec_")
    with session_factory() as session:
        stored = subscriptions.accepted_secrets(session, SecretBox(settings.store.secret_keys))
        sealed = session.execute(text("SELECT secret_encrypted FROM webhook_secrets")).scalar_one()
        [row] = subscriptions.list_subscriptions(session)
    assert [s.reveal() for s in stored] == [registered.secret]
    assert registered.secret not in sealed
    assert (row.webhook_id, row.registered_by_recon) == (first.webhook_id, True)


def test_web_processes_starting_together_register_one_webhook(
    settings: Settings, session_factory: sessionmaker[Session], provider: SandboxDriver
) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(5)

    def start_up(owner: str) -> None:
        barrier.wait()
        results.append(ensure(settings, session_factory, owner=owner, wait=20).created)

    threads = [threading.Thread(target=start_up, args=(f"web-{i}",)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, False, True]
    assert len(provider.webhooks()) == 1


def test_a_suspended_webhook_is_replaced(
    settings: Settings, session_factory: sessionmaker[Session], provider: SandboxDriver
) -> None:
    first = ensure(settings, session_factory)
    provider.set_webhook_status(first.webhook_id, "SUSPENDED")
    second = ensure(settings, session_factory)
    assert second.created
    assert second.webhook_id != first.webhook_id
    assert sorted(h["status"] for h in provider.webhooks()) == ["ACTIVE", "SUSPENDED"]


def test_a_webhook_registered_elsewhere_is_not_duplicated(
    settings: Settings, session_factory: sessionmaker[Session], provider: SandboxDriver
) -> None:
    response = provider.http.post(
        "/company/v1/webhooks/register",
        json={
            "url": receiver_url(settings),
            "eventTypes": sorted(ALL_EVENTS),
            "secret": "whsec_" + "c2VjcmV0LWZyb20tdGhlLWRhc2hib2FyZA==",
        },
        headers={"X-API-Key": "ck_test_recon", "X-App-Id": "6f1c2a34-0000-4000-8000-00000000c0de"},
    )
    assert response.status_code == 201
    result = ensure(settings, session_factory)
    assert not result.created
    assert len(provider.webhooks()) == 1
    with session_factory() as session:
        [row] = subscriptions.list_subscriptions(session)
    assert row.registered_by_recon is False


def test_rotation_registers_a_new_secret_and_keeps_the_old_for_the_overlap(
    settings: Settings,
    session_factory: sessionmaker[Session],
    provider: SandboxDriver,
    sandbox: SandboxServer,
) -> None:
    first = ensure(settings, session_factory)
    with make_company_client(settings) as client:
        rotated = rotate_secret(settings, session_factory, client, owner="test")
    old_secret = sandbox.state.webhooks[first.webhook_id].secret
    new_secret = sandbox.state.webhooks[rotated.webhook_id].secret
    assert old_secret != new_secret
    box = SecretBox(settings.store.secret_keys)
    now = utcnow()
    with session_factory() as session:
        during = {s.reveal() for s in subscriptions.accepted_secrets(session, box, now)}
        later = {
            s.reveal()
            for s in subscriptions.accepted_secrets(session, box, now + timedelta(seconds=3601))
        }
        retired = {s.webhook_id: s.retired_at for s in subscriptions.list_subscriptions(session)}
    assert during == {old_secret, new_secret}
    assert later == {new_secret}
    assert retired[first.webhook_id] is not None
    assert retired[rotated.webhook_id] is None


def test_start_up_registers_in_the_background_and_accepts_its_deliveries(
    make_client: Callable[..., TestClient[object]],
    settings: Settings,
    provider: SandboxDriver,
    sandbox: SandboxServer,
) -> None:
    client = make_client(settings, self_register=True)
    assert client.get("/health").status_code == 200  # answering while registering
    result = client.app.state["registration"].wait(20)
    assert result is not None
    assert result.created
    secret = sandbox.state.webhooks[result.webhook_id].secret
    body = event_body()
    response = client.post(PATH, content=body, headers=signed_headers(body, secret=secret))
    assert response.status_code == 200


def test_start_up_registration_failure_is_logged_and_retried(
    make_client: Callable[..., TestClient[object]], recon_env: dict[str, str]
) -> None:
    settings = load_settings({**recon_env, "RECON_COMPANY_URL": "http://127.0.0.1:1"})
    with structlog.testing.capture_logs() as logs:
        client = make_client(settings, self_register=True)
        assert client.get("/health").status_code == 200
        wait_for(
            lambda: any(e["event"] == "webhook.registration_failed" for e in logs),
            20,
            "the failed registration to be logged",
        )
    failure = next(e for e in logs if e["event"] == "webhook.registration_failed")
    assert failure["retry_in_seconds"] > 0
    assert client.app.state["registration"].result is None
    assert client.get("/health").status_code == 200


def test_secret_is_never_in_a_log_line(
    settings: Settings,
    session_factory: sessionmaker[Session],
    sandbox: SandboxServer,
    provider: SandboxDriver,
) -> None:
    with structlog.testing.capture_logs() as logs:
        result = ensure(settings, session_factory)
    secret = sandbox.state.webhooks[result.webhook_id].secret
    assert any(e["event"] == "webhook.registered" for e in logs)
    assert secret not in repr(logs)
    assert secret[6:] not in repr(logs)


def test_lease_held_elsewhere_makes_registration_wait_then_give_up(
    settings: Settings,
    session_factory: sessionmaker[Session],
    engine: Engine,
    provider: SandboxDriver,
) -> None:
    from reconciliation.notifications.registration import RegistrationBusyError

    with transaction(session_factory) as session:
        assert subscriptions.take_lease(
            session, subscriptions.REGISTRATION_LEASE, "someone-else", timedelta(minutes=5)
        )
    started = time.monotonic()
    with pytest.raises(RegistrationBusyError, match="another recon process is registering"):
        ensure(settings, session_factory, wait=1.0)
    assert time.monotonic() - started >= 1.0
    assert provider.webhooks() == []
