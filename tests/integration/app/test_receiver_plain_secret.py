"""The receiver with a webhook secret that is a plain string, not `whsec_<base64>`.

The company spec says only that a secret is a "string", so an operator may register a webhook
outside recon with a dashboard password and put the same text in RECON_WEBHOOK_SECRETS. The
provider then signs Standard Webhooks `v1` with the text's UTF-8 bytes; a bare base64 string
may instead be read the way the official library reads it (decoded). Both must be accepted, and
nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks.webhooks import Webhook as OfficialWebhook

from app.main import create_app
from foundation import ConfigError, Settings, load_settings
from reconciliation.store.db import make_engine, make_session_factory
from sandbox.config import DEFAULT_APP_ID, DEFAULT_COMPANY_KEY, SandboxConfig
from sandbox.server import SandboxServer
from tests.integration.app.receiver_helpers import (
    PATH,
    ServedApp,
    event_body,
    free_port,
    stored,
    wait_for,
)
from tests.integration.app.sandbox_driver import SandboxDriver

PLAIN = "some-plain-string with spaces & ünïcode"
BARE_BASE64 = base64.b64encode(b"a dashboard secret, base64 but no prefix").decode()
COMPANY = {"X-API-Key": DEFAULT_COMPANY_KEY, "X-App-Id": DEFAULT_APP_ID}


def v1_headers(key: bytes, body: bytes, delivery_id: str | None = None) -> dict[str, str]:
    """Standard Webhooks headers computed here, from the raw key, not by recon's own signer."""
    msg_id = delivery_id or f"msg_{uuid.uuid4().hex}"
    stamp = str(int(time.time()))
    mac = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": stamp,
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
    }


def settings_with(recon_env: dict[str, str], secrets: str) -> Settings:
    return load_settings({**recon_env, "RECON_WEBHOOK_SECRETS": secrets})


def test_a_plain_secret_in_the_settings_verifies_its_deliveries(
    make_client: Callable[..., TestClient[Litestar]], recon_env: dict[str, str]
) -> None:
    client = make_client(settings_with(recon_env, PLAIN))
    factory: sessionmaker[Session] = client.app.state["session_factory"]
    body = event_body("PAYMENT_RECEIVED")
    accepted = client.post(PATH, content=body, headers=v1_headers(PLAIN.encode(), body, "msg_a"))
    assert accepted.status_code == 200, accepted.text
    other = event_body("PAYMENT_RECEIVED")
    refused = client.post(PATH, content=other, headers=v1_headers(b"another secret", other))
    assert refused.status_code == 401 and refused.json()["error"] == "bad_signature"
    assert PLAIN not in refused.text
    assert [(r.delivery_id, r.state) for r in stored(factory)] == [("msg_a", "pending")]


def test_a_bare_base64_secret_is_read_either_way(
    make_client: Callable[..., TestClient[Litestar]], recon_env: dict[str, str]
) -> None:
    client = make_client(settings_with(recon_env, BARE_BASE64))
    factory: sessionmaker[Session] = client.app.state["session_factory"]
    as_text = event_body("ACCOUNT_CREATED")
    headers = v1_headers(BARE_BASE64.encode(), as_text, "msg_text")
    assert client.post(PATH, content=as_text, headers=headers).status_code == 200
    # The official library decodes a prefixless secret as base64.
    decoded = event_body("ACCOUNT_CREATED")
    now = datetime.now(UTC)
    official = {
        "content-type": "application/json",
        "webhook-id": "msg_official",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": OfficialWebhook(BARE_BASE64).sign(
            "msg_official", now, decoded.decode()
        ),
    }
    assert client.post(PATH, content=decoded, headers=official).status_code == 200
    assert {r.delivery_id for r in stored(factory)} == {"msg_text", "msg_official"}


def test_a_malformed_whsec_secret_still_stops_start_up(recon_env: dict[str, str]) -> None:
    """A `whsec_` prefix promises base64; anything else after it is a copy error, named."""
    settings = settings_with(recon_env, "whsec_not base64!")
    with (
        pytest.raises(ConfigError, match="entry 1") as caught,
        TestClient(create_app(settings, enqueue=None, self_register=False)),
    ):
        pass
    assert "not base64!" not in str(caught.value)


def test_the_provider_signs_with_the_plain_secret_and_recon_accepts(
    base_env: dict[str, str], db_url: str
) -> None:
    """End to end: a webhook registered at the sandbox by hand, with a plain-text secret."""
    config = SandboxConfig(delivery_retry_schedule=(0.2, 0.5, 1.0))
    port = free_port()
    engine = make_engine(db_url)
    store = make_session_factory(engine)
    try:
        with SandboxServer(config) as sandbox:
            settings = load_settings(
                {
                    **base_env,
                    "DATABASE_URL": db_url,
                    "RECON_COMPANY_URL": sandbox.base_url,
                    "RECON_PUBLIC_URL": f"http://127.0.0.1:{port}",
                    "RECON_WEBHOOK_SECRETS": PLAIN,
                }
            )
            with ServedApp(create_app(settings, enqueue=None, self_register=False), port):
                registered = httpx.post(
                    f"{sandbox.base_url}/company/v1/webhooks/register",
                    headers=COMPANY,
                    json={
                        "url": f"http://127.0.0.1:{port}{PATH}",
                        "eventTypes": ["ACCOUNT_CREATED"],
                        "secret": PLAIN,
                    },
                    timeout=10,
                )
                assert registered.is_success, registered.text
                provider = SandboxDriver(sandbox.base_url)
                try:
                    provider.endpoint()
                    rows = wait_for(
                        lambda: [r for r in stored(store) if r.event_type == "ACCOUNT_CREATED"],
                        20,
                        "the ACCOUNT_CREATED delivery to land",
                    )
                    log = wait_for(
                        lambda: [a for a in provider.delivery_log() if a["outcome"] != "pending"],
                        10,
                        "the sandbox to log the attempt",
                    )
                finally:
                    provider.close()
    finally:
        engine.dispose()
    assert [r.state for r in rows] == ["pending"]
    assert [(a["outcome"], a["statusCode"]) for a in log] == [("delivered", 200)]
