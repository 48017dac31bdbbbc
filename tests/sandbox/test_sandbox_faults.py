"""Fault injection through the control API: route faults and delivery faults, seeded."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.sandbox.conftest import make_world
from tests.sandbox.sandbox_helpers import (
    AUTH,
    COMPANY,
    SECRET,
    Receiver,
    World,
    problem,
    sandbox_config,
)

ENV = "GET /v1/environment"


def arm_route(world: World, **fault: Any) -> None:
    r = world.client.post("/_sandbox/faults/routes", json=fault)
    assert r.status_code == 201, r.text


def arm_delivery(world: World, **fault: Any) -> None:
    r = world.client.post("/_sandbox/faults/deliveries", json=fault)
    assert r.status_code == 201, r.text


def test_error_5xx_in_the_gateway_envelope(world: World) -> None:
    arm_route(world, route=ENV, kind="error_5xx", count=1)
    problem(
        world.client.get("/v1/environment", headers=AUTH),
        503,
        "Unavailable",
        "unavailable-ServiceUnavailable",
    )
    assert world.client.get("/v1/environment", headers=AUTH).status_code == 200


def test_error_5xx_other_status_and_before_processing(world: World) -> None:
    arm_route(world, route="POST /v1/programmable-endpoints", kind="error_5xx", status=502)
    r = world.client.post("/v1/programmable-endpoints", json={}, headers=AUTH)
    assert r.status_code == 502 and r.json()["problem"]["status"] == 502
    assert world.state.directory.endpoints == {}


def test_rate_limit_429_with_retry_after(world: World) -> None:
    arm_route(world, route=ENV, kind="rate_limit_429", seconds=7, count=2)
    for _ in range(2):
        r = world.client.get("/v1/environment", headers=AUTH)
        problem(r, 429, "RateLimited", "rate-limited-TooManyRequests")
        assert r.headers["retry-after"] == "7"
    assert world.client.get("/v1/environment", headers=AUTH).status_code == 200


def test_company_route_fault_uses_the_company_envelope(world: World) -> None:
    arm_route(world, route="GET /company/v1/webhooks", kind="rate_limit_429", count=1)
    r = world.client.get("/company/v1/webhooks", headers=COMPANY)
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    assert set(r.json()) == {"success", "message", "data", "timestamp"}


def test_slow(world: World) -> None:
    arm_route(world, route=ENV, kind="slow", seconds=0.3, count=1)
    start = time.monotonic()
    assert world.client.get("/v1/environment", headers=AUTH).status_code == 200
    assert time.monotonic() - start >= 0.3


def test_malformed_json_after_processing(world: World) -> None:
    arm_route(world, route="POST /v1/programmable-endpoints", kind="malformed_json", count=1)
    body = {
        "template": "customer_balance_internal",
        "valueUnit": {"kind": "fiat", "currency": "NGN"},
        "owner": {
            "kind": "existing_account_owner",
            "ownerRef": "6f1c2a34-0000-4000-8000-000000000001",
            "ownerKind": "x",
        },
    }
    r = world.client.post(
        "/v1/programmable-endpoints",
        json=body,
        headers={**AUTH, "Idempotency-Key": "6f1c2a34-0000-4000-8000-0000000000ff"},
    )
    assert r.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.content)
    assert len(world.state.directory.endpoints) == 1  # processed all the same


def test_drop_connection_in_process_raises(world: World) -> None:
    arm_route(world, route=ENV, kind="drop_connection", count=1)
    with pytest.raises(Exception):  # noqa: B017 - in-process, a dropped connection is an exception
        world.client.get("/v1/environment", headers=AUTH)
    assert world.client.get("/v1/environment", headers=AUTH).status_code == 200


def test_wildcard_route_and_clear(world: World) -> None:
    arm_route(world, route="*", kind="error_5xx")
    assert world.client.get("/v1/environment", headers=AUTH).status_code == 503
    assert world.client.get("/company/v1/webhooks", headers=COMPANY).status_code == 503
    assert world.client.get("/_sandbox/faults").json()["routes"][0]["fired"] == 2
    assert world.client.delete("/_sandbox/faults").status_code == 200
    assert world.client.get("/v1/environment", headers=AUTH).status_code == 200


def test_faults_act_before_authentication(world: World) -> None:
    arm_route(world, route=ENV, kind="error_5xx", count=1)
    assert world.client.get("/v1/environment").status_code == 503


def test_unknown_fault_kind_is_refused(world: World) -> None:
    assert world.client.post("/_sandbox/faults/routes", json={"kind": "explode"}).status_code == 400
    assert (
        world.client.post("/_sandbox/faults/deliveries", json={"kind": "explode"}).status_code
        == 400
    )


def fire_pattern(seed: int) -> list[int]:
    for world in make_world(sandbox_config(seed=seed)):
        arm_route(world, route=ENV, kind="error_5xx", rate=0.5)
        return [world.client.get("/v1/environment", headers=AUTH).status_code for _ in range(40)]
    raise AssertionError


def test_rates_are_seeded() -> None:
    a, b, c = fire_pattern(42), fire_pattern(42), fire_pattern(43)
    assert a == b and a != c
    assert 5 < a.count(503) < 35


# --- delivery faults ---------------------------------------------------------------


def payloads(receiver: Receiver) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in receiver.received]


def test_delivery_drop(world: World, receiver: Receiver) -> None:
    hook = world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="drop", count=1)
    ep = world.endpoint()
    world.credit(ep, 5)
    world.advance(60)
    assert receiver.received == []
    assert world.state.deliveries[-1].outcome == "dropped"
    assert world.state.webhooks[hook["webhookId"]].successful == 1
    world.credit(ep, 6)
    assert len(receiver.received) == 1


def test_delivery_duplicate(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="duplicate", count=1)
    world.credit(world.endpoint(), 5)
    a, b = receiver.wait_for(2)
    assert a.body == b.body and a.headers["webhook-id"] == b.headers["webhook-id"]
    Webhook(SECRET).verify(b.body, b.headers)


def test_delivery_reorder(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="reorder", count=1)
    ep = world.endpoint()
    world.credit(ep, 1, land=False)
    world.credit(ep, 2, land=False)
    world.advance(0.1)
    got = payloads(receiver)
    assert [p["data"]["amount"] for p in got] == ["0.02", "0.01"]


def test_delivery_reorder_released_after_hold(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="reorder", seconds=2)
    world.credit(world.endpoint(), 1)
    assert receiver.received == []
    world.advance(2)
    assert len(receiver.received) == 1


def test_delivery_delay(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="*", kind="delay", seconds=5)
    world.credit(world.endpoint(), 5)
    world.advance(4.9)
    assert receiver.received == []
    world.advance(0.1)
    assert len(receiver.received) == 1


def test_delivery_altered_amount_is_correctly_signed(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="altered_amount")
    ep = world.endpoint()
    world.credit(ep, 150_050)
    (got,) = receiver.received
    p = Webhook(SECRET).verify(got.body, got.headers)
    assert p["data"]["amount"] == "1500.51"
    assert world.state.postings(ep["holdingRef"])[0]["amountMinorUnits"] == "150050"


def test_delivery_bad_signature(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="bad_signature")
    world.credit(world.endpoint(), 5)
    (got,) = receiver.received
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(got.body, got.headers)


def test_delivery_same_id_other_body(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    arm_delivery(world, eventType="PAYMENT_RECEIVED", kind="same_id_other_body")
    world.credit(world.endpoint(), 5)
    a, b = receiver.wait_for(2)
    assert a.headers["webhook-id"] == b.headers["webhook-id"]
    assert a.body != b.body
    pa, pb = Webhook(SECRET).verify(a.body, a.headers), Webhook(SECRET).verify(b.body, b.headers)
    assert pa["id"] == pb["id"] and pa["data"]["amount"] != pb["data"]["amount"]


def test_delivery_fault_targets_its_event_type_only(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED", "ACCOUNT_CREATED"])
    arm_delivery(world, eventType="ACCOUNT_CREATED", kind="drop")
    world.credit(world.endpoint(), 5)
    assert [p["event"] for p in payloads(receiver)] == ["PAYMENT_RECEIVED"]


def delivery_pattern(seed: int, receiver: Receiver) -> list[tuple[str, str]]:
    for world in make_world(sandbox_config(seed=seed)):
        world.register(receiver.url, ["PAYMENT_RECEIVED"])
        for kind in ("drop", "duplicate", "bad_signature"):
            arm_delivery(world, eventType="PAYMENT_RECEIVED", kind=kind, rate=0.3)
        ep = world.endpoint()
        for i in range(20):
            world.credit(ep, i + 1)
        return [(a.label, a.outcome) for a in world.state.deliveries]
    raise AssertionError


def test_delivery_faults_are_seeded(receiver: Receiver) -> None:
    assert delivery_pattern(5, receiver) == delivery_pattern(5, receiver)
