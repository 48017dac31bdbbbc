"""End to end with the sandbox: every event type, every signature scheme, over real HTTP.

recon's web app runs under uvicorn; at start-up it registers itself at the sandbox's company
API; the sandbox is then made to raise each event (an endpoint is created, an inbound credit
posts, one transfer settles and one fails, KYC is verified) and delivers them, signed with the
scheme under test, to the receiver. Each must land verified (pending) in the inbox, and the
sandbox must have seen a 2xx for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import load_settings
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Alert
from sandbox.config import SIGNATURE_SCHEMES, SandboxConfig
from sandbox.server import SandboxServer
from tests.integration.app.receiver_helpers import ServedApp, free_port, stored, wait_for
from tests.integration.app.sandbox_driver import SandboxDriver

EVENTS = {
    "ACCOUNT_CREATED",
    "PAYMENT_RECEIVED",
    "TRANSACTION_COMPLETED",
    "TRANSACTION_FAILED",
    "KYC_VERIFIED",
}


@pytest.fixture
def store(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.mark.parametrize("scheme", SIGNATURE_SCHEMES)
def test_every_event_arrives_verified_in_the_inbox(
    scheme: str, base_env: dict[str, str], db_url: str, store: sessionmaker[Session]
) -> None:
    config = SandboxConfig(
        signature_scheme=scheme,  # type: ignore[arg-type]
        transfer_finality_delay_seconds=0.05,
        inbound_posting_delay_seconds=0.01,
        projection_lag_seconds=0.01,
        delivery_retry_schedule=(0.2, 0.5, 1.0),
        retry_policy_time_scale=0.001,
    )
    port = free_port()
    with SandboxServer(config) as sandbox:
        settings = load_settings(
            {
                **base_env,
                "DATABASE_URL": db_url,
                "RECON_COMPANY_URL": sandbox.base_url,
                "RECON_PUBLIC_URL": f"http://127.0.0.1:{port}",
                "RECON_SIGNATURE_SCHEME": scheme,
            }
        )
        app = create_app(settings, enqueue=None, self_register=True)
        with ServedApp(app, port):
            registration = app.state["registration"].wait(20)
            assert registration is not None, "recon did not register itself"
            provider = SandboxDriver(sandbox.base_url)
            try:
                funded = provider.endpoint()
                other = provider.endpoint()
                provider.credit(funded, 500_000)
                wait_for(
                    lambda: sandbox.state.posted_sum(funded["holdingRef"]) == 500_000,
                    10,
                    "the inbound credit to post",
                )
                wait_for(
                    lambda: sandbox.state.holdings[funded["holdingRef"]].available >= 500_000,
                    10,
                    "the balance to project",
                )
                provider.transfer(funded, other, 1_000, "settle")
                provider.transfer(funded, other, 2_000, "fail")
                provider.kyc_verified(other)

                def landed() -> set[str] | None:
                    types = {r.event_type for r in stored(store) if r.state == "pending"}
                    return types if types >= EVENTS else None

                wait_for(landed, 20, f"all five event types to land ({scheme})")

                def logged() -> list[dict[str, Any]] | None:
                    # The sandbox logs an attempt once it has read our answer.
                    log = provider.delivery_log()
                    seen = {a["eventType"] for a in log if a["outcome"] == "delivered"}
                    return log if seen >= EVENTS else None

                log = wait_for(logged, 10, "the sandbox to log every delivery")
            finally:
                provider.close()

    rows = stored(store)
    assert {r.scheme for r in rows} == {scheme}
    assert all(r.state == "pending" for r in rows), [(r.event_type, r.error) for r in rows]
    assert sorted(r.event_type for r in rows if r.event_type) == sorted(
        [
            "ACCOUNT_CREATED",
            "ACCOUNT_CREATED",
            "PAYMENT_RECEIVED",
            "TRANSACTION_COMPLETED",
            "TRANSACTION_FAILED",
            "KYC_VERIFIED",
        ]
    )
    delivered = [a for a in log if a["outcome"] == "delivered"]
    assert {a["eventType"] for a in delivered} == EVENTS
    assert all(200 <= a["statusCode"] < 300 for a in delivered)
    assert not [a for a in log if a["outcome"] == "failed"], "a delivery was refused"
    # The inbox holds exactly the bytes the provider sent.
    sent = {a["deliveryId"]: a["body"].encode() for a in delivered}
    for row in rows:
        event_id = row.headers.get("webhook-id") or row.delivery_id
        assert sent[event_id] == row.body


def test_provider_faults_duplicate_conflict_and_forgery(
    base_env: dict[str, str], db_url: str, store: sessionmaker[Session]
) -> None:
    """A duplicate is stored once, a re-sent id with another body is quarantined and alerted,
    a forged signature is refused (and never stored), all through the sandbox's own faults."""
    config = SandboxConfig(
        inbound_posting_delay_seconds=0.01,
        delivery_retry_schedule=(0.1, 0.1),
        retry_policy_time_scale=0.0001,
    )
    port = free_port()
    with SandboxServer(config) as sandbox:
        settings = load_settings(
            {
                **base_env,
                "DATABASE_URL": db_url,
                "RECON_COMPANY_URL": sandbox.base_url,
                "RECON_PUBLIC_URL": f"http://127.0.0.1:{port}",
            }
        )
        app = create_app(settings, enqueue=None, self_register=True)
        with ServedApp(app, port):
            assert app.state["registration"].wait(20) is not None
            provider = SandboxDriver(sandbox.base_url)
            try:
                for event, kind in (
                    ("ACCOUNT_CREATED", "bad_signature"),
                    ("PAYMENT_RECEIVED", "duplicate"),
                    ("KYC_VERIFIED", "same_id_other_body"),
                ):
                    added = provider.http.post(
                        "/_sandbox/faults/deliveries", json={"eventType": event, "kind": kind}
                    )
                    assert added.status_code == 201, added.text
                endpoint = provider.endpoint()
                provider.credit(endpoint, 10_000)
                provider.kyc_verified(endpoint)

                def settled() -> list[dict[str, Any]] | None:
                    log = provider.delivery_log()
                    finished = [a for a in log if a["outcome"] == "delivered"]
                    refused = [a for a in log if a["eventType"] == "ACCOUNT_CREATED"]
                    enough = len(finished) >= 4 and len(refused) >= 3  # first try + 2 retries
                    return log if enough else None

                log = wait_for(settled, 20, "the faulty deliveries to play out")
            finally:
                provider.close()

    rows = stored(store)
    by_type: dict[str | None, list[str]] = {}
    for row in rows:
        by_type.setdefault(row.event_type, []).append(row.state)
    assert by_type == {"PAYMENT_RECEIVED": ["pending"], "KYC_VERIFIED": ["pending", "quarantined"]}
    assert {a["statusCode"] for a in log if a["eventType"] == "ACCOUNT_CREATED"} == {401}
    with store() as session:
        alerts = session.scalars(select(Alert)).all()
    assert [a.kind for a in alerts] == ["delivery_body_conflict"]
