"""Gateway: receiving endpoints, environment status, sandbox inbound credits."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sandbox.variants import PRESETS
from tests.sandbox.sandbox_helpers import (
    AUTH,
    NGN,
    World,
    check_read_shape,
    is_ts,
    is_uuid,
    new_key,
    problem,
    read_value,
    success_body,
    write_headers,
)
from tests.sandbox.test_sandbox_endpoints import _replay_record
from tests.sandbox.test_sandbox_transfers import playing


def activate(world: World, owner: str, key: str | None = None, currency: str = "NGN") -> Any:
    body = {
        "ownerRef": owner,
        "ownerKind": "BusinessEntity",
        "valueUnit": {"kind": "fiat", "currency": currency},
    }
    return world.client.post("/v1/receiving-endpoints", json=body, headers=write_headers(key))


def current(world: World, owner: str, **override: str) -> Any:
    params = {
        "ownerKind": "BusinessEntity",
        "ownerRef": owner,
        "valueUnitKind": "fiat",
        "currency": "NGN",
        "asset": "",
        "network": "",
        "instrumentRef": "",
        **override,
    }
    return world.client.get("/v1/receiving-endpoints/current", params=params, headers=AUTH)


def test_create_receiving_endpoint_activation(world: World) -> None:
    owner, key = new_key(), new_key()
    out = success_body(activate(world, owner, key), 200)
    assert set(out) == {"activation"}
    a = check_read_shape(out["activation"], "Accounts")
    assert set(a) == {
        "activationRef",
        "accountRef",
        "endpointRef",
        "holdingRefs",
        "ownerRef",
        "ownerKind",
        "capabilityRef",
        "valueUnit",
        "requestEvidenceRef",
        "readinessReceiptRef",
        "idempotencyKey",
    }
    for k in (
        "activationRef",
        "accountRef",
        "endpointRef",
        "capabilityRef",
        "requestEvidenceRef",
        "readinessReceiptRef",
    ):
        assert is_uuid(a[k])
    assert len(a["holdingRefs"]) == 1 and is_uuid(a["holdingRefs"][0])
    assert (a["ownerRef"], a["ownerKind"], a["valueUnit"]) == (owner, "BusinessEntity", NGN)
    assert a["idempotencyKey"] == key


def test_current_receiving_endpoint(world: World) -> None:
    owner = new_key()
    a = activate(world, owner).json()["body"]["activation"]["value"]
    value = read_value(current(world, owner), "Accounts")
    assert set(value) == {"resource", "account"}
    res, acc = value["resource"], value["account"]
    assert set(res) == {
        "activationRef",
        "endpointRef",
        "ownerRef",
        "ownerKind",
        "capabilityRef",
        "holdingUnits",
        "availability",
        "freshness",
    }
    assert res["activationRef"] == a["activationRef"] and res["endpointRef"] == a["endpointRef"]
    assert res["holdingUnits"] == [NGN]
    assert (res["availability"], res["freshness"]) == ("Available", "Current")
    assert acc == {
        "accountRef": a["accountRef"],
        "ownerRef": owner,
        "ownerKind": "BusinessEntity",
        "endpointRef": a["endpointRef"],
        "holdingRefs": a["holdingRefs"],
    }
    for never in ("intentFingerprint", "endpointFingerprint", "policyFingerprint"):
        assert never not in str(value)


def test_second_activation_reuses_the_endpoint(world: World) -> None:
    owner = new_key()
    first = activate(world, owner).json()["body"]["activation"]["value"]
    second = activate(world, owner).json()["body"]["activation"]["value"]
    assert first["endpointRef"] == second["endpointRef"]
    assert first["activationRef"] != second["activationRef"]
    res = read_value(current(world, owner))["resource"]
    assert res["activationRef"] == second["activationRef"]


def test_activation_replay(world: World) -> None:
    owner, key = new_key(), new_key()
    with playing(world, PRESETS["recon"]):
        first = activate(world, owner, key).json()
        assert activate(world, owner, key).json() == first
    problem(activate(world, new_key(), key), 400, "InvalidInput", "invalid-Input")


@pytest.mark.parametrize(
    "override",
    [
        {"ownerKind": ""},
        {"valueUnitKind": ""},
        {"valueUnitKind": "crypto"},
        {"currency": ""},
        {"asset": "BTC"},
    ],
)
def test_current_query_is_checked(world: World, override: dict[str, str]) -> None:
    owner = new_key()
    activate(world, owner)
    problem(current(world, owner, **override), 400, "InvalidInput", "invalid-Input")


def test_inapplicable_unit_parts_must_be_sent_empty_not_omitted(world: World) -> None:
    owner = new_key()
    activate(world, owner)
    params = {
        "ownerKind": "BusinessEntity",
        "ownerRef": owner,
        "valueUnitKind": "fiat",
        "currency": "NGN",
    }
    r = world.client.get("/v1/receiving-endpoints/current", params=params, headers=AUTH)
    problem(r, 400, "InvalidInput", "invalid-Input")


def test_current_unknown_owner_is_404(world: World) -> None:
    problem(current(world, new_key()), 404, "NotFound", "not-found-ResourceMissing")
    owner = new_key()
    activate(world, owner)
    problem(current(world, owner, currency="USD"), 404, "NotFound", "not-found-ResourceMissing")


def test_environment_status(world: World) -> None:
    value = read_value(world.client.get("/v1/environment", headers=AUTH), "SecurityIdentity")
    assert set(value) == {
        "organisationRef",
        "applicationRef",
        "environmentRef",
        "environmentKind",
        "displayName",
        "appStatus",
        "environmentStatus",
        "allowedActions",
        "unavailableParts",
    }
    for k in ("organisationRef", "applicationRef", "environmentRef"):
        assert is_uuid(value[k])
    assert value["environmentKind"] == "DemoSandbox"
    assert (value["appStatus"], value["environmentStatus"]) == ("Active", "Active")
    assert value["allowedActions"] == ["ViewEnvironmentShell"]
    assert isinstance(value["unavailableParts"], list)


def test_inbound_credit_is_202_and_posts_asynchronously(world: World) -> None:
    ep = world.endpoint()
    body = {
        "accountRef": ep["accountRef"],
        "endpointRef": ep["endpointRef"],
        "holdingRef": ep["holdingRef"],
        "valueUnit": NGN,
        "amountMinorUnits": "150050",
    }
    r = world.client.post("/v1/sandbox/inbound-credits", json=body, headers=write_headers())
    out = success_body(r, 202)
    assert set(out) == {"simulation"}
    sim = check_read_shape(out["simulation"], "EventRuntime")
    assert set(sim) == {
        "simulationRef",
        "acceptedAt",
        "stage",
        "revision",
        "materialFingerprint",
        "targetAccountRef",
        "targetEndpointRef",
        "targetHoldingRef",
        "valueUnit",
        "amountMinorUnits",
        "requestedBy",
        "accountsPostingReceiptRef",
        "eventReceiptRefs",
    }
    assert sim["stage"] == "EvidencePublished" and isinstance(sim["revision"], int)
    assert is_ts(sim["acceptedAt"])
    assert re.fullmatch(r"fp:sandbox-simulation-material:[0-9a-f]{64}", sim["materialFingerprint"])
    assert (sim["targetAccountRef"], sim["targetEndpointRef"], sim["targetHoldingRef"]) == (
        ep["accountRef"],
        ep["endpointRef"],
        ep["holdingRef"],
    )
    assert sim["amountMinorUnits"] == "150050" and sim["valueUnit"] == NGN
    assert sim["requestedBy"] == r.json()["evidence"][0]["receiptRef"]
    assert all(is_uuid(x) for x in sim["eventReceiptRefs"]) and sim["eventReceiptRefs"]
    # not posted yet: the posting is projected asynchronously
    assert world.state.postings(ep["holdingRef"]) == []
    world.advance(0.1)
    (posting,) = world.state.postings(ep["holdingRef"])
    assert posting["receiptRef"] == sim["accountsPostingReceiptRef"]
    assert posting["amountMinorUnits"] == "150050"
    assert (posting["postingSide"], posting["journalKind"]) == ("credit", "transfer_settlement")


def credit_body(ep: dict[str, str]) -> dict[str, Any]:
    return {
        "accountRef": ep["accountRef"],
        "endpointRef": ep["endpointRef"],
        "holdingRef": ep["holdingRef"],
        "valueUnit": NGN,
        "amountMinorUnits": "10",
    }


def test_inbound_credit_replay_posts_once(world: World) -> None:
    ep = world.endpoint()
    body, key = credit_body(ep), new_key()
    with playing(world, PRESETS["recon"]):
        first = world.client.post(
            "/v1/sandbox/inbound-credits", json=body, headers=write_headers(key)
        )
        again = world.client.post(
            "/v1/sandbox/inbound-credits", json=body, headers=write_headers(key)
        )
    assert again.status_code == 202 and again.json() == first.json()
    world.advance(1)
    assert len(world.state.postings(ep["holdingRef"])) == 1


def test_every_write_replays_an_inbound_credit_as_a_replay_record(world: World) -> None:
    ep = world.endpoint()
    body, key = credit_body(ep), new_key()
    with playing(world, PRESETS["standard"]):
        first = world.client.post(
            "/v1/sandbox/inbound-credits", json=body, headers=write_headers(key)
        )
        again = world.client.post(
            "/v1/sandbox/inbound-credits", json=body, headers=write_headers(key)
        )
    assert again.status_code == 202
    made = first.json()["body"]["simulation"]["value"]["simulationRef"]
    assert _replay_record(again, "simulationRef") == made
    world.advance(1)
    assert len(world.state.postings(ep["holdingRef"])) == 1


def test_every_write_replays_an_activation_as_a_replay_record(world: World) -> None:
    owner, key = new_key(), new_key()
    with playing(world, PRESETS["standard"]):
        first = activate(world, owner, key)
        again = activate(world, owner, key)
    assert again.status_code == 200
    made = first.json()["body"]["activation"]["value"]["endpointRef"]
    assert _replay_record(again, "endpointRef") == made


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"amountMinorUnits": "0"}, 400),
        ({"amountMinorUnits": 10}, 400),
        ({"valueUnit": {"kind": "fiat", "currency": "USD"}}, 400),
        ({"holdingRef": "6f1c2a34-0000-4000-8000-000000000001"}, 404),
        ({"endpointRef": "6f1c2a34-0000-4000-8000-000000000001"}, 404),
    ],
)
def test_inbound_credit_refusals(world: World, change: dict[str, Any], status: int) -> None:
    ep = world.endpoint()
    body = {
        "accountRef": ep["accountRef"],
        "endpointRef": ep["endpointRef"],
        "holdingRef": ep["holdingRef"],
        "valueUnit": NGN,
        "amountMinorUnits": "10",
        **change,
    }
    r = world.client.post("/v1/sandbox/inbound-credits", json=body, headers=write_headers())
    assert r.status_code == status


def test_inbound_credit_needs_an_external_receive_posture(world: World) -> None:
    internal = world.endpoint("customer_balance_internal")
    body = {
        "accountRef": internal["accountRef"],
        "endpointRef": internal["endpointRef"],
        "holdingRef": internal["holdingRef"],
        "valueUnit": NGN,
        "amountMinorUnits": "10",
    }
    problem(
        world.client.post("/v1/sandbox/inbound-credits", json=body, headers=write_headers()),
        400,
        "InvalidInput",
        "invalid-Input",
    )
    owner = new_key()
    a = activate(world, owner).json()["body"]["activation"]["value"]
    body = {
        "accountRef": a["accountRef"],
        "endpointRef": a["endpointRef"],
        "holdingRef": a["holdingRefs"][0],
        "valueUnit": NGN,
        "amountMinorUnits": "10",
    }
    r = world.client.post("/v1/sandbox/inbound-credits", json=body, headers=write_headers())
    assert r.status_code == 202
