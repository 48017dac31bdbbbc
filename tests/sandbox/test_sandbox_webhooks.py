"""Webhook delivery: events raised by the ledger, payload shape (docs/decisions.md), signing
(verified with the official ``standardwebhooks`` package and the other schemes), retries with
backoff, counters, suspension; and every payload shape and delivery id style a provider variant
plays (sandbox/variants.py). Tests that assert recon's own shape pin ``PRESETS["recon"]``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from sandbox.variants import PRESETS, ProviderVariant, VariantError, parse_variant
from tests.sandbox.conftest import make_world
from tests.sandbox.sandbox_helpers import (
    AUTH,
    COMPANY,
    SECRET,
    Receiver,
    World,
    is_ts,
    is_uuid,
    sandbox_config,
    write_headers,
)

DATA_FIELDS = {
    "transferRef",
    "receiptRef",
    "accountRef",
    "endpointRef",
    "holdingRef",
    "accountNumber",
    "bankCode",
    "amount",
    "currency",
    "status",
    "narration",
}


@pytest.fixture(scope="module")
def _recon_world() -> Iterator[World]:
    yield from make_world(sandbox_config(variant=PRESETS["recon"]))


@pytest.fixture
def recon_world(_recon_world: World) -> World:
    """A fresh world that plays recon's own payload shape, whatever RECON_SANDBOX_VARIANT says."""
    state = _recon_world.state
    state.reset()
    state.keys.clear()
    state.keys.update(state.config.gateway_keys)
    return _recon_world


def verified(received: Any) -> dict[str, Any]:
    """Verify with the official package exactly as a receiver would; return the payload."""
    payload: dict[str, Any] = Webhook(SECRET).verify(received.body, received.headers)
    assert set(payload) == {"id", "event", "createdAt", "data"}
    assert is_uuid(payload["id"]) and is_ts(payload["createdAt"])
    assert received.headers["webhook-id"] == payload["id"]
    assert received.headers["content-type"] == "application/json"
    assert set(payload["data"]) == DATA_FIELDS
    return payload


def test_payment_received_on_inbound_credit(recon_world: World, receiver: Receiver) -> None:
    world = recon_world
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    ep = world.endpoint()
    sim = world.credit(ep, 150_050)
    (got,) = receiver.wait_for(1)
    p = verified(got)
    assert p["event"] == "PAYMENT_RECEIVED"
    d = p["data"]
    account_number = ep["locators"][0]["display"].split(":")[1]
    assert d == {
        "transferRef": None,
        "receiptRef": sim["accountsPostingReceiptRef"],
        "accountRef": ep["accountRef"],
        "endpointRef": ep["endpointRef"],
        "holdingRef": ep["holdingRef"],
        "accountNumber": account_number,
        "bankCode": "000",
        "amount": "1500.50",
        "currency": "NGN",
        "status": "SUCCESSFUL",
        "narration": d["narration"],
    }
    assert isinstance(d["narration"], str)


def test_transaction_completed_and_failed(recon_world: World, receiver: Receiver) -> None:
    world = recon_world
    world.register(receiver.url, ["TRANSACTION_COMPLETED", "TRANSACTION_FAILED"])
    src, dst = world.funded(10_000), world.endpoint()
    ok = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 100), headers=write_headers()
    ).json()["body"]["transfer"]["value"]
    world.client.post("/_sandbox/transfers/outcomes", json={"outcome": "fail"})
    bad = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 7), headers=write_headers()
    ).json()["body"]["transfer"]["value"]
    world.advance(2.0)
    got = [verified(r) for r in receiver.wait_for(2)]
    by_event = {p["event"]: p["data"] for p in got}
    done, failed = by_event["TRANSACTION_COMPLETED"], by_event["TRANSACTION_FAILED"]
    assert done["transferRef"] == ok["transferRef"] and done["status"] == "SUCCESSFUL"
    assert done["receiptRef"] == world.state.postings(dst["holdingRef"])[-1]["receiptRef"]
    assert done["amount"] == "1.00" and done["holdingRef"] == src["holdingRef"]
    assert failed["transferRef"] == bad["transferRef"] and failed["status"] == "FAILED"
    assert failed["receiptRef"] is None and failed["amount"] == "0.07"


def test_account_created_and_kyc_verified_on_demand(recon_world: World, receiver: Receiver) -> None:
    world = recon_world
    world.register(receiver.url, ["ACCOUNT_CREATED", "KYC_VERIFIED"])
    ep = world.endpoint()
    r = world.client.post("/_sandbox/events/kyc-verified", json={"endpointRef": ep["endpointRef"]})
    assert r.status_code == 201
    world.advance()
    got = [verified(x) for x in receiver.wait_for(2)]
    assert [p["event"] for p in got] == ["ACCOUNT_CREATED", "KYC_VERIFIED"]
    for p in got:
        d = p["data"]
        assert d["endpointRef"] == ep["endpointRef"] and d["accountNumber"]
        assert d["amount"] is d["currency"] is d["status"] is None
    missing = world.client.post(
        "/_sandbox/events/kyc-verified",
        json={"endpointRef": "6f1c2a34-0000-4000-8000-000000000009"},
    )
    assert missing.status_code == 404


def test_only_active_subscribed_webhooks_receive(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["TRANSACTION_COMPLETED"])
    world.register(receiver.url, ["PAYMENT_RECEIVED"], isActive=False)
    world.credit(world.endpoint(), 5)
    world.advance(5)
    assert receiver.received == []
    assert [e["event"] for e in world.state.events] == ["ACCOUNT_CREATED", "PAYMENT_RECEIVED"]


def test_every_subscribed_webhook_gets_the_same_event_id(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    world.register(receiver.url + "/second", ["PAYMENT_RECEIVED"])
    world.credit(world.endpoint(), 5)
    a, b = receiver.wait_for(2)
    assert a.headers["webhook-id"] == b.headers["webhook-id"]


def counters(world: World, webhook_id: str) -> dict[str, Any]:
    r = world.client.get("/company/v1/webhooks", headers=COMPANY)
    hooks: list[dict[str, Any]] = r.json()["data"]["webhooks"]
    (hook,) = [w for w in hooks if w["webhookId"] == webhook_id]
    return hook


def test_retries_with_backoff_and_counters(recon_world: World, receiver: Receiver) -> None:
    world = recon_world
    hook = world.register(receiver.url, ["PAYMENT_RECEIVED"])
    receiver.statuses = [500, 503]
    world.credit(world.endpoint(), 5)  # first attempt fails
    assert len(receiver.received) == 1
    world.advance(0.9)
    assert len(receiver.received) == 1  # backoff 1 s not over yet
    world.advance(0.1)
    assert len(receiver.received) == 2  # second attempt fails: next in 2 s
    world.advance(1.9)
    assert len(receiver.received) == 2
    world.advance(0.1)
    got = receiver.wait_for(3)
    assert len({r.headers["webhook-id"] for r in got}) == 1  # same id on every retry
    for r in got:
        verified(r)
    c = counters(world, hook["webhookId"])
    assert (c["totalDeliveries"], c["successfulDeliveries"], c["failedDeliveries"]) == (3, 1, 2)
    assert is_ts(c["lastTriggered"]) and c["status"] == "ACTIVE"
    log = world.client.get("/_sandbox/deliveries").json()["deliveries"]
    assert [(d["attempt"], d["outcome"], d["statusCode"]) for d in log] == [
        (1, "failed", 500),
        (2, "failed", 503),
        (3, "delivered", 200),
    ]


def test_schedule_runs_out(world: World, receiver: Receiver) -> None:
    hook = world.register(receiver.url, ["PAYMENT_RECEIVED"])
    receiver.statuses = [500] * 10
    world.credit(world.endpoint(), 5)
    world.advance(1)
    world.advance(2)
    world.advance(4)
    world.advance(60)
    assert len(receiver.received) == 4  # first try + three retries (schedule 1, 2, 4)
    assert counters(world, hook["webhookId"])["failedDeliveries"] == 4


def test_registered_retry_policy_is_honoured(world: World, receiver: Receiver) -> None:
    world.register(
        receiver.url,
        ["PAYMENT_RECEIVED"],
        retryPolicy={"maxAttempts": 2, "initialDelaySeconds": 3, "backoffMultiplier": 2},
    )
    receiver.statuses = [500] * 10
    world.credit(world.endpoint(), 5)
    world.advance(2.9)
    assert len(receiver.received) == 1
    world.advance(0.1)
    world.advance(60)
    assert len(receiver.received) == 2


def test_timeout_counts_as_failure(world: World, receiver: Receiver) -> None:
    hook = world.register(receiver.url, ["PAYMENT_RECEIVED"])
    world.state.hub.http = httpx.Client(timeout=0.2)
    receiver.delay = 0.5
    world.credit(world.endpoint(), 5)
    c = counters(world, hook["webhookId"])
    assert (c["totalDeliveries"], c["failedDeliveries"]) == (1, 1)
    log = world.state.deliveries[-1]
    assert log.outcome == "failed" and log.status_code is None and "Timeout" in (log.error or "")


def test_unreachable_receiver_counts_as_failure(world: World) -> None:
    hook = world.register("http://127.0.0.1:9/nothing-listens", ["PAYMENT_RECEIVED"])
    world.credit(world.endpoint(), 5)
    assert counters(world, hook["webhookId"])["failedDeliveries"] == 1


def test_suspended_after_a_run_of_failures(world: World, receiver: Receiver) -> None:
    hook = world.register(receiver.url, ["PAYMENT_RECEIVED"])
    receiver.statuses = [500] * 100
    ep = world.endpoint()
    for _ in range(3):
        world.credit(ep, 5)  # 3 failed attempts
    world.advance(1)  # 3 retries due: 6 failures, suspended at the 5th
    c = counters(world, hook["webhookId"])
    assert c["status"] == "SUSPENDED"
    assert c["failedDeliveries"] == 5
    world.advance(100)
    world.credit(ep, 5)
    assert counters(world, hook["webhookId"])["totalDeliveries"] == 5
    listed = world.client.get("/company/v1/webhooks?status=SUSPENDED", headers=COMPANY).json()
    assert listed["data"]["totalCount"] == 1 and listed["data"]["activeCount"] == 0


def test_success_resets_the_failure_run(world: World, receiver: Receiver) -> None:
    hook = world.register(receiver.url, ["PAYMENT_RECEIVED"])
    ep = world.endpoint()
    for _ in range(4):
        receiver.statuses = [500, 500, 500, 200]
        world.credit(ep, 5)
        for step in (1, 2, 4):
            world.advance(step)
    assert counters(world, hook["webhookId"])["status"] == "ACTIVE"


def test_wrong_secret_fails_verification(world: World, receiver: Receiver) -> None:
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    world.credit(world.endpoint(), 5)
    (got,) = receiver.wait_for(1)
    other = "whsec_" + base64.b64encode(b"another-secret-entirely").decode()
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)


@pytest.fixture(
    params=[
        "ed25519",
        "hmac-sha256-hex",
        "hmac-sha256-base64",
        "hmac-sha512-hex",
        "hmac-sha512-base64",
    ]
)
def scheme_world(request: pytest.FixtureRequest) -> Iterator[tuple[str, World]]:
    config = sandbox_config(
        signature_scheme=request.param,
        signature_header="X-Provider-Signature",
        variant=PRESETS["recon"],
    )
    for w in make_world(config):
        yield request.param, w


def test_other_signature_schemes(scheme_world: tuple[str, World], receiver: Receiver) -> None:
    scheme, world = scheme_world
    secret = "plain-text-shared-secret"
    r = world.client.post(
        "/company/v1/webhooks/register",
        headers=COMPANY,
        json={"url": receiver.url, "eventTypes": ["PAYMENT_RECEIVED"], "secret": secret},
    )
    hook = r.json()["data"]
    world.credit(world.endpoint(), 5)
    (got,) = receiver.wait_for(1)
    assert json.loads(got.body)["event"] == "PAYMENT_RECEIVED"
    if scheme == "ed25519":
        pub = world.client.get(f"/_sandbox/webhooks/{hook['webhookId']}/public-key").json()
        raw = base64.b64decode(pub["publicKey"].removeprefix("whpk_"))
        version, sig = got.headers["webhook-signature"].split(",", 1)
        assert version == "v1a"
        signed = (
            f"{got.headers['webhook-id']}.{got.headers['webhook-timestamp']}.".encode() + got.body
        )
        Ed25519PublicKey.from_public_bytes(raw).verify(base64.b64decode(sig), signed)
        return
    algo = hashlib.sha256 if "sha256" in scheme else hashlib.sha512
    digest = hmac.new(secret.encode(), got.body, algo).digest()
    want = digest.hex() if scheme.endswith("hex") else base64.b64encode(digest).decode()
    assert got.headers["x-provider-signature"] == want
    assert "webhook-signature" not in got.headers


def test_gateway_has_no_event_feed(world: World) -> None:
    assert world.client.get("/v1/events", headers=AUTH).status_code == 404


def test_logs_keep_only_the_latest_entries(receiver: Receiver) -> None:
    """A long-running sandbox must not hold every body it ever sent: the oldest go first."""
    for world in make_world(sandbox_config(delivery_log_limit=3)):
        world.register(receiver.url, ["PAYMENT_RECEIVED"])
        ep = world.endpoint()
        for amount in (1, 2, 3, 4, 5):
            world.credit(ep, amount)
        world.advance(5)
        receiver.wait_for(5)
        logged = world.client.get("/_sandbox/deliveries").json()["deliveries"]
        events = world.client.get("/_sandbox/events").json()["events"]
        assert len(logged) == 3 and len(events) == 3
        assert [e["data"]["amount"] for e in events] == ["0.03", "0.04", "0.05"]


# --- provider variants: payload shapes and what `webhook-id` carries ------------------------


def variant_world(**choices: Any) -> Iterator[World]:
    return make_world(sandbox_config(variant=ProviderVariant(name="test", **choices)))


def credited(world: World, receiver: Receiver, amount: int = 150_050) -> tuple[Any, dict[str, Any]]:
    """Register, credit an endpoint, and return the one PAYMENT_RECEIVED delivery and the sim."""
    world.register(receiver.url, ["PAYMENT_RECEIVED"])
    ep = world.endpoint()
    sim = world.credit(ep, amount)
    (got,) = receiver.wait_for(1)
    sim["endpoint"] = ep
    return got, sim


def test_standard_webhooks_shape(receiver: Receiver) -> None:
    for world in variant_world(payload_shape="standard-webhooks"):
        got, sim = credited(world, receiver)
        body = Webhook(SECRET).verify(got.body, got.headers)
        assert set(body) == {"id", "type", "timestamp", "data"}
        assert body["id"].startswith("evt_") and got.headers["webhook-id"] == body["id"]
        assert body["type"] == "PAYMENT_RECEIVED" and is_ts(body["timestamp"])
        data, ep = body["data"], sim["endpoint"]
        assert data["amountMinorUnits"] == "150050" and "amount" not in data
        assert data["currency"] == "NGN" and data["status"] == "SUCCESSFUL"
        assert data["receiptRef"] == sim["accountsPostingReceiptRef"]
        assert data["holdingRef"] == ep["holdingRef"] and data["transferRef"] is None
        # The event log keeps the canonical event under the same id.
        (logged,) = [e for e in world.state.events if e["event"] == "PAYMENT_RECEIVED"]
        assert logged["id"] == body["id"] and logged["data"]["amount"] == "1500.50"


def test_flat_shape_sends_an_exact_json_number(receiver: Receiver) -> None:
    for world in variant_world(payload_shape="flat"):
        got, sim = credited(world, receiver)
        # The amount is a JSON number written with the currency's decimals, not a float's.
        assert b'"amount":1500.50,' in got.body
        body = json.loads(got.body, parse_float=str)
        assert set(body) == {
            "id",
            "eventType",
            "createdAt",
            "reference",
            "receiptReference",
            "accountRef",
            "endpointRef",
            "holdingRef",
            "accountNumber",
            "bankCode",
            "amount",
            "currency",
            "status",
            "narration",
        }
        assert is_uuid(body["id"]) and body["eventType"] == "PAYMENT_RECEIVED"
        assert isinstance(body["createdAt"], int) and body["createdAt"] > 1_600_000_000_000
        assert body["reference"] is None
        assert body["receiptReference"] == sim["accountsPostingReceiptRef"]
        assert body["accountNumber"] == sim["endpoint"]["locators"][0]["display"].split(":")[1]
        Webhook(SECRET).verify(got.body, got.headers)


def test_flat_account_event_carries_null_money(receiver: Receiver) -> None:
    for world in variant_world(payload_shape="flat"):
        world.register(receiver.url, ["ACCOUNT_CREATED"])
        world.endpoint()
        world.advance()
        (got,) = receiver.wait_for(1)
        body = json.loads(got.body)
        assert body["eventType"] == "ACCOUNT_CREATED"
        assert body["amount"] is body["currency"] is body["status"] is None


def test_message_ids_differ_from_body_ids_and_hold_across_retries(receiver: Receiver) -> None:
    for world in variant_world(payload_shape="standard-webhooks", delivery_id="message-id"):
        world.register(receiver.url, ["PAYMENT_RECEIVED"])
        world.register(receiver.url + "/second", ["PAYMENT_RECEIVED"])
        receiver.statuses = [500]
        ep = world.endpoint()
        world.credit(ep, 5)
        world.advance(1)  # the failed first attempt is retried
        first = receiver.wait_for(3)
        world.credit(ep, 7)
        second = receiver.wait_for(5)[3:]
        for got in [*first, *second]:
            Webhook(SECRET).verify(got.body, got.headers)  # signed over the message id
        ids = {r.headers["webhook-id"] for r in first}
        assert len(ids) == 1, "one message id on every webhook and every retry"
        (message_id,) = ids
        body_ids = {json.loads(r.body)["id"] for r in [*first, *second]}
        assert message_id.startswith("msg_") and message_id not in body_ids
        assert {r.headers["webhook-id"] for r in second} != ids, "a fresh id per message"
        log = world.client.get("/_sandbox/deliveries").json()["deliveries"]
        assert {a["deliveryId"] for a in log if a["eventId"] in body_ids} >= ids


def test_same_id_other_body_keeps_the_message_id(receiver: Receiver) -> None:
    for world in variant_world(payload_shape="flat", delivery_id="message-id"):
        added = world.client.post(
            "/_sandbox/faults/deliveries",
            json={"eventType": "PAYMENT_RECEIVED", "kind": "same_id_other_body"},
        )
        assert added.status_code == 201, added.text
        world.register(receiver.url, ["PAYMENT_RECEIVED"])
        world.credit(world.endpoint(), 5)
        a, b = receiver.wait_for(2)
        assert a.headers["webhook-id"] == b.headers["webhook-id"]
        assert a.headers["webhook-id"].startswith("msg_") and a.body != b.body


@pytest.mark.parametrize("shape", ["recon", "standard-webhooks", "flat"])
def test_event_type_outcome_sends_no_status_anywhere(receiver: Receiver, shape: str) -> None:
    for world in variant_world(payload_shape=shape, body_outcome="event-type"):
        got, _ = credited(world, receiver)
        Webhook(SECRET).verify(got.body, got.headers)
        assert b"status" not in got.body.lower()
        assert b"PAYMENT_RECEIVED" in got.body and b"NGN" in got.body
        # The event log keeps the outcome the ledger decided, for tests to compare with.
        (logged,) = [e for e in world.state.events if e["event"] == "PAYMENT_RECEIVED"]
        assert logged["data"]["status"] == "SUCCESSFUL"


def test_the_standard_preset_says_outcomes_by_event_type_only() -> None:
    assert parse_variant("standard").body_outcome == "event-type"
    assert parse_variant("recon").body_outcome == parse_variant("sparse").body_outcome == "status"
    assert parse_variant("sparse,body_outcome=event-type").body_outcome == "event-type"
    with pytest.raises(VariantError, match="body_outcome takes one of status, event-type"):
        parse_variant("recon,body_outcome=none")
