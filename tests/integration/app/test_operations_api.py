"""The operator side of the web app: inbox API behind the admin token, health, readiness,
metrics and the OpenAPI schema."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from foundation.settings import Settings, load_settings
from tests.integration.app.receiver_helpers import (
    ADMIN,
    PATH,
    event_body,
    signed_headers,
    stored,
    wait_for,
)


def deliver(client: TestClient[object], event: str, body: bytes | None = None) -> None:
    body = body if body is not None else event_body(event)
    assert client.post(PATH, content=body, headers=signed_headers(body)).status_code == 200


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", "Basic YWRtaW46YWRtaW4=", "admin-token-for-tests-0123456789"],
)
def test_inbox_needs_the_admin_token(client: TestClient[object], authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for method, path in (
        ("GET", "/deliveries"),
        ("GET", "/deliveries/1"),
        ("POST", "/deliveries/1/replay"),
    ):
        response = client.request(method, path, headers=headers)
        assert response.status_code == 401
        assert "Authorization: Bearer <RECON_ADMIN_TOKEN>" in response.json()["detail"]


def test_inbox_lists_filters_and_pages(client: TestClient[object]) -> None:
    for event in ("PAYMENT_RECEIVED", "KYC_VERIFIED", "PAYMENT_RECEIVED", "PAYMENT_RECEIVED"):
        deliver(client, event)
    deliver(client, "", b"{broken")
    page = client.get(
        "/deliveries", params={"eventType": "PAYMENT_RECEIVED", "limit": 2}, headers=ADMIN
    )
    assert page.status_code == 200
    first = page.json()
    assert [i["eventType"] for i in first["items"]] == ["PAYMENT_RECEIVED"] * 2
    rest = client.get(
        "/deliveries",
        params={"eventType": "PAYMENT_RECEIVED", "limit": 2, "cursor": first["nextCursor"]},
        headers=ADMIN,
    ).json()
    assert len(rest["items"]) == 1
    assert rest["nextCursor"] is None
    ids = [i["id"] for i in first["items"] + rest["items"]]
    assert ids == sorted(ids, reverse=True)
    quarantined = client.get("/deliveries", params={"state": "quarantined"}, headers=ADMIN).json()
    assert [i["error"][:26] for i in quarantined["items"]] == ["body is not valid JSON (JS"]


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"state": "done"}, "state 'done' is not valid"),
        ({"cursor": "abc"}, "cursor 'abc' is not valid"),
        ({"limit": "0"}, "limit"),
    ],
)
def test_bad_inbox_queries_are_400_with_the_reason(
    client: TestClient[object], params: dict[str, str], fragment: str
) -> None:
    response = client.get("/deliveries", params=params, headers=ADMIN)
    assert response.status_code == 400
    assert fragment in response.text


def test_show_gives_the_exact_bytes(
    client: TestClient[object], factory: sessionmaker[Session]
) -> None:
    body = b'{"id":"e","event":"PAYMENT_RECEIVED","data":{"narration":"caf\xc3\xa9"}}'
    deliver(client, "", body)
    row_id = stored(factory)[0].id
    shown = client.get(f"/deliveries/{row_id}", headers=ADMIN).json()
    assert base64.b64decode(shown["bodyBase64"]) == body
    assert shown["body"] == body.decode()
    assert shown["delivery"]["state"] == "pending"
    assert "webhook-signature" in shown["headers"]
    assert client.get("/deliveries/999999", headers=ADMIN).status_code == 404


def test_replay_resets_and_enqueues(
    client: TestClient[object], factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    deliver(client, "", b"{broken")
    row = stored(factory)[0]
    assert row.state == "quarantined"
    response = client.post(f"/deliveries/{row.id}/replay", headers=ADMIN)
    assert response.status_code == 200
    assert response.json()["state"] == "pending"
    assert stored(factory)[0].state == "pending"
    wait_for(lambda: row.id in enqueued, what="the replayed row to be enqueued")
    assert client.post("/deliveries/424242/replay", headers=ADMIN).status_code == 404


def test_health_and_openapi(client: TestClient[object]) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    schema = client.get("/schema/openapi.json")
    assert schema.status_code == 200
    assert "/deliveries" in schema.json()["paths"]


def test_ready_checks_the_store_and_the_secret_and_parts_check_the_broker(
    make_client: Callable[..., TestClient[object]], recon_env: dict[str, str], redis_url: str
) -> None:
    with_redis = make_client(load_settings({**recon_env, "REDIS_URL": redis_url}))
    assert with_redis.get("/ready").json() == {"ready": True, "store": "ok", "secret": "ok"}
    assert with_redis.get("/health/parts").json()["broker"] == "ok"
    dead_redis = make_client(load_settings({**recon_env, "REDIS_URL": "redis://127.0.0.1:1/0"}))
    # Deliveries are still committed and acknowledged without Redis: ready, not a part down.
    assert dead_redis.get("/ready").status_code == 200
    response = dead_redis.get("/health/parts")
    assert response.status_code == 503
    assert response.json()["database"] == "ok"
    assert response.json()["broker"].startswith("unavailable")


def test_metrics_count_outcomes_and_inbox_depth(client: TestClient[object]) -> None:
    deliver(client, "PAYMENT_RECEIVED")
    deliver(client, "", b"{broken")
    client.post(PATH, content=b"{}", headers={"content-type": "text/plain"})
    text = client.get("/metrics").text
    assert 'recon_inbox_depth{state="pending"} 1.0' in text
    assert 'recon_inbox_depth{state="quarantined"} 1.0' in text
    for outcome in (
        "accepted",
        "quarantined",
        "bad_content_type",
        "bad_signature",
        "db_unavailable",
    ):
        assert f'recon_webhook_deliveries_total{{outcome="{outcome}"}}' in text
    assert "recon_webhook_verification_seconds_bucket" in text
    assert "recon_webhook_commit_batch_size_count" in text


def test_reporting_routes_are_behind_the_admin_guard(client: TestClient[object]) -> None:
    """Whatever app.reporting_routes mounts answers 401 without the token."""
    import importlib.util

    if importlib.util.find_spec("app.reporting_routes") is None:
        pytest.skip("app.reporting_routes is not written yet")
    paths = [
        route.path
        for route in client.app.routes
        if route.path not in ("/health", "/ready", "/health/parts", "/metrics", PATH)
        and not route.path.startswith(("/schema", "/deliveries"))
    ]
    assert paths, "app.reporting_routes mounted no route"
    for path in paths:
        if "{" in path:
            continue
        answer = client.get(path, follow_redirects=False)
        if path.startswith("/console"):
            # The console's own way in: its sign-in page and assets are public, every other
            # page sends a visitor without a session to the sign-in page.
            if path in ("/console/sign-in",) or path.startswith("/console/static"):
                continue
            assert answer.status_code in (302, 303, 405), path
            if answer.status_code != 405:
                assert answer.headers["location"].startswith("/console/sign-in"), path
            continue
        assert answer.status_code in (401, 405), path


def test_settings_secret_not_in_any_response(
    client: TestClient[object], settings: Settings
) -> None:
    for path in ("/health", "/ready", "/metrics", "/schema/openapi.json"):
        text = client.get(path).text
        assert settings.web.admin_token.reveal() not in text
        for secret in settings.webhooks.secrets:
            assert secret.reveal() not in text


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [("trace-42.a:b_c", "trace-42.a:b_c"), ("bad id\r\nX-Injected: 1", None), ("x" * 200, None)],
)
def test_request_id_is_echoed_only_when_plain(
    client: TestClient[object], sent: str, echoed: str | None
) -> None:
    response = client.get("/health", headers={"X-Request-Id": sent.replace("\r\n", " ")})
    got = response.headers["x-request-id"]
    if echoed is None:
        assert got != sent.replace("\r\n", " ")
        assert 8 < len(got) < 64
    else:
        assert got == echoed


def test_generated_request_ids_differ(client: TestClient[object]) -> None:
    first = client.get("/health").headers["x-request-id"]
    second = client.get("/health").headers["x-request-id"]
    assert first != second
