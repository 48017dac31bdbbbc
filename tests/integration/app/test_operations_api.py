"""The operator side of the web app: inbox API behind the admin token, health, readiness,
metrics and the OpenAPI schema."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from foundation import Settings, load_settings
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


#: A value of each path parameter type, so every route is asked at a concrete path.
SAMPLE_PARAMETERS: dict[type, str] = {int: "1", str: "x", UUID: str(uuid4()), Path: "x"}
#: What answers without credentials on purpose: probes, metrics, the receiver (it checks its
#: own signatures), the schema, the console's sign-in page and its assets.
PUBLIC: tuple[str, ...] = ("/health", "/ready", "/metrics", PATH, "/schema", "/console/sign-in")


def test_every_route_refuses_a_caller_without_credentials(client: TestClient[object]) -> None:
    """Every route but the public ones, asked by each method it serves (a POST-only route by
    POST), refuses a caller with neither token nor session: the API with 401, the console by
    sending the visitor to its sign-in page."""
    asked = []
    for route in client.app.routes:
        if route.path.startswith(PUBLIC) or route.path.startswith("/console/static"):
            continue
        path = route.path
        for parameter in route.path_parameters.values():
            path = path.replace(f"{{{parameter.full}}}", SAMPLE_PARAMETERS[parameter.type])
        for method in sorted(set(route.methods) - {"OPTIONS", "HEAD"}):
            answer = client.request(method, path, follow_redirects=False)
            asked.append((method, path))
            if path.startswith("/console"):
                assert answer.status_code in (302, 303), (method, path, answer.status_code)
                assert answer.headers["location"].startswith("/console/sign-in"), (method, path)
            else:
                assert answer.status_code == 401, (method, path, answer.status_code)
    assert {("POST", "/alerts/1/ack"), ("POST", "/console/exceptions/match")} <= set(asked)


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
