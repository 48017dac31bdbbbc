"""Gateway: programmable endpoints (create, list, read, readiness, lifecycle) and section 3's
posture transitions."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sandbox.bulk import build_bulk
from sandbox.variants import PRESETS
from tests.sandbox.sandbox_helpers import (
    AUTH,
    NGN,
    World,
    check_read_shape,
    is_uuid,
    new_key,
    problem,
    read_value,
    success_body,
    write_headers,
)
from tests.sandbox.test_sandbox_transfers import playing

ENDPOINT_FIELDS = {
    "template",
    "accountRef",
    "endpointRef",
    "holdingRef",
    "ownerRef",
    "ownerKind",
    "unit",
    "ledgerPartition",
    "ledgerNormalSide",
    "capabilityPosture",
    "locators",
}
POSTURE_DIMS = {"receive", "send", "lifecycle", "drain", "backing", "purpose", "gas", "liquidity"}
SCOPE = {"organisationRef", "appRef", "environmentRef"}


def create_body(template: str = "customer_balance_internal", **extra: Any) -> dict[str, Any]:
    return {
        "template": template,
        "owner": {
            "kind": "existing_account_owner",
            "ownerRef": new_key(),
            "ownerKind": "business-entity",
        },
        "valueUnit": NGN,
        **extra,
    }


def read(world: World, ref: str) -> dict[str, Any]:
    value = read_value(
        world.client.get(f"/v1/programmable-endpoints/{ref}", headers=AUTH), "Accounts"
    )
    assert set(value) == SCOPE | {"result"}
    result: dict[str, Any] = value["result"]
    return result


def lifecycle(world: World, ref: str, body: dict[str, Any], key: str | None = None) -> Any:
    return world.client.post(
        f"/v1/programmable-endpoints/{ref}/lifecycle", json=body, headers=write_headers(key)
    )


def test_create_internal_endpoint(world: World) -> None:
    body = create_body()
    r = world.client.post("/v1/programmable-endpoints", json=body, headers=write_headers())
    out = success_body(r, 200)
    assert set(out) == {"command", "endpoint"}
    assert out["command"] == {"occurrence": "first_accepted", "provisioningStatus": "created"}
    ep = check_read_shape(out["endpoint"], "Accounts")
    assert set(ep) == ENDPOINT_FIELDS
    assert ep["template"] == "customer_balance_internal"
    for k in ("accountRef", "endpointRef", "holdingRef"):
        assert is_uuid(ep[k])
    assert ep["ownerRef"] == body["owner"]["ownerRef"] and ep["ownerKind"] == "business-entity"
    assert ep["unit"] == NGN
    assert ep["ledgerPartition"] == "customer_liability"
    assert ep["ledgerNormalSide"] == "credit_normal"
    assert set(ep["capabilityPosture"]) == POSTURE_DIMS
    assert ep["capabilityPosture"]["receive"] == "internal_only"
    assert ep["capabilityPosture"]["backing"] == "internal_ledger"
    assert ep["locators"] == []


def test_create_collection_child_has_locator_and_parent(world: World) -> None:
    r = world.client.post(
        "/v1/programmable-endpoints",
        json=create_body("customer_balance_collection_child"),
        headers=write_headers(),
    )
    ep = success_body(r, 200)["endpoint"]["value"]
    assert set(ep) == ENDPOINT_FIELDS | {"collectionRef", "parentEndpointRef"}
    assert is_uuid(ep["collectionRef"]) and is_uuid(ep["parentEndpointRef"])
    assert ep["capabilityPosture"] == {
        "receive": "external_and_internal",
        "send": "outbound_enabled",
        "lifecycle": "permanent",
        "drain": "no_drain",
        "backing": "collection_child",
        "purpose": "customer_balance",
        "gas": "no_gas",
        "liquidity": "no_liquidity",
    }
    (loc,) = ep["locators"]
    assert set(loc) == {"locatorRef", "form", "display"} and is_uuid(loc["locatorRef"])
    assert loc["form"] == "nigerian_bank_account"
    assert re.fullmatch(r"000:[1-9][0-9]{9}:[^:]+", loc["display"])


@pytest.mark.parametrize(
    "field",
    [
        "providerRefs",
        "collectionRefs",
        "parentEndpointRefs",
        "providerAllocationKeys",
        "locatorPayloads",
        "providerSelectionHints",
    ],
)
def test_derived_fields_are_refused(world: World, field: str) -> None:
    body = {**create_body(), field: []}
    problem(
        world.client.post("/v1/programmable-endpoints", json=body, headers=write_headers()),
        400,
        "InvalidInput",
        "invalid-Input",
    )
    assert world.state.directory.endpoints == {}


@pytest.mark.parametrize(
    "body",
    [
        create_body("customer_balance_threshold"),
        create_body(thresholdProgram={"x": 1}),
        create_body(transientProgram={"x": 1}),
        {"template": "customer_balance_internal", "valueUnit": NGN},
        {**create_body(), "owner": {"kind": "new_owner", "ownerRef": new_key(), "ownerKind": "x"}},
        {**create_body(), "valueUnit": {"kind": "fiat"}},
    ],
)
def test_bad_create_is_400(world: World, body: dict[str, Any]) -> None:
    problem(
        world.client.post("/v1/programmable-endpoints", json=body, headers=write_headers()),
        400,
        "InvalidInput",
        "invalid-Input",
    )


def test_create_replay_returns_the_first_answer(world: World) -> None:
    with playing(world, PRESETS["recon"]):
        _create_replay_returns_the_first_answer(world)


def _create_replay_returns_the_first_answer(world: World) -> None:
    key, body = new_key(), create_body()
    first = world.client.post("/v1/programmable-endpoints", json=body, headers=write_headers(key))
    again = world.client.post("/v1/programmable-endpoints", json=body, headers=write_headers(key))
    assert again.status_code == 200 and again.json() == first.json()
    assert len(world.state.directory.endpoints) == 1
    other = world.client.post(
        "/v1/programmable-endpoints", json=create_body(), headers=write_headers(key)
    )
    problem(other, 400, "InvalidInput", "invalid-Input")


def test_list_pages_forward_with_after_endpoint_ref(world: World) -> None:
    made = {world.endpoint()["endpointRef"] for _ in range(7)}
    made |= {world.endpoint("customer_balance_internal")["endpointRef"] for _ in range(5)}
    seen: list[str] = []
    after: str | None = None
    while True:
        params: dict[str, Any] = {"pageSize": 5}
        if after:
            params["afterEndpointRef"] = after
        value = read_value(
            world.client.get("/v1/programmable-endpoints", params=params, headers=AUTH), "Accounts"
        )
        assert set(value) == SCOPE | {"rows"}
        rows = value["rows"]
        for row in rows:
            assert set(row) == {
                "family",
                "accountRef",
                "endpointRef",
                "ownerRef",
                "ownerKind",
                "unit",
                "capabilityPosture",
                "locatorSummary",
            }
            if row["family"] == "customer_balance_collection_child":
                assert row["locatorSummary"] == {
                    "kind": "locator_forms",
                    "count": 1,
                    "forms": ["nigerian_bank_account"],
                }
            else:
                assert row["locatorSummary"] == {"kind": "no_locator", "forms": []}
        seen += [row["endpointRef"] for row in rows]
        if len(rows) < 5:
            break
        after = rows[-1]["endpointRef"]
    assert seen == sorted(made)


def test_list_page_size_default_and_bounds(world: World) -> None:
    for _ in range(3):
        world.endpoint()
    r = world.client.get("/v1/programmable-endpoints", headers=AUTH)
    assert len(read_value(r)["rows"]) == 3
    assert (
        world.client.get("/v1/programmable-endpoints?pageSize=100", headers=AUTH).status_code == 200
    )
    for bad in ("101", "0", "-1", "ten"):
        problem(
            world.client.get(f"/v1/programmable-endpoints?pageSize={bad}", headers=AUTH),
            400,
            "InvalidInput",
            "invalid-Input",
        )
    problem(
        world.client.get(f"/v1/programmable-endpoints?afterEndpointRef={new_key()}", headers=AUTH),
        400,
        "InvalidInput",
        "invalid-Input",
    )


def test_list_default_page_is_50(world: World) -> None:
    build_bulk(world.state, holdings=60, postings=0)
    assert (
        len(read_value(world.client.get("/v1/programmable-endpoints", headers=AUTH))["rows"]) == 50
    )


def test_read_found_carries_the_lifecycle_guard(world: World) -> None:
    ep = world.endpoint()
    result = read(world, ep["endpointRef"])
    assert set(result) == {
        "kind",
        "endpoint",
        "replacementLineage",
        "thresholdSettlementLifecycle",
        "transientDrainLifecycle",
        "endpointRef",
    }
    assert result["kind"] == "found"
    assert result["replacementLineage"] == {
        "predecessorEndpointRef": None,
        "successorEndpointRef": None,
    }
    assert result["thresholdSettlementLifecycle"] is None
    assert result["transientDrainLifecycle"] is None
    guard = result["endpoint"]["lifecycleGuard"]
    assert guard["stateVersion"] == 1
    assert re.fullmatch(r"fp:endpoint-lifecycle-guard:[0-9a-f]{64}", guard["fingerprint"])
    assert {k: v for k, v in result["endpoint"].items() if k != "lifecycleGuard"} == ep


def test_read_not_found_and_not_programmable(world: World) -> None:
    missing = new_key()
    result = read(world, missing)
    assert result["kind"] == "not_found" and result["endpoint"] is None
    assert result["endpointRef"] == missing
    receiving = world.client.post(
        "/v1/receiving-endpoints",
        json={"ownerRef": new_key(), "ownerKind": "BusinessEntity", "valueUnit": NGN},
        headers=write_headers(),
    ).json()["body"]["activation"]["value"]
    assert read(world, receiving["endpointRef"])["kind"] == "not_programmable_endpoint"
    parent = world.endpoint()["parentEndpointRef"]
    assert read(world, parent)["kind"] == "not_programmable_endpoint"
    problem(
        world.client.get("/v1/programmable-endpoints/not-a-uuid", headers=AUTH),
        400,
        "InvalidInput",
        "invalid-Input",
    )


def test_readiness_explains_posture(world: World) -> None:
    child, internal = world.endpoint(), world.endpoint("customer_balance_internal")

    def families(ref: str) -> dict[str, tuple[str, list[str]]]:
        r = world.client.get(
            f"/v1/programmable-endpoints/{ref}/effective-operation-readiness", headers=AUTH
        )
        value = read_value(r, "ComplianceReadiness")
        result = value["result"]
        assert set(result) == {"kind", "endpoint", "operationFamilies"}
        assert "lifecycleGuard" not in result["endpoint"]
        for forbidden in (
            "actorPrincipalRef",
            "policyFingerprint",
            "runtimeStateVersion",
            "runtimePosture",
            "controls",
            "requiredAction",
            "accountsRole",
            "detail",
        ):
            assert forbidden not in str(value)
        return {f["family"]: (f["status"], f["reasonCodes"]) for f in result["operationFamilies"]}

    assert families(child["endpointRef"]) == {
        "receive_funds": ("ready", ["ready"]),
        "send_funds": ("ready", ["ready"]),
        "internal_transfer_destination": ("ready", ["ready"]),
        "policy_drain": ("blocked", ["operation_not_supported"]),
    }
    assert families(internal["endpointRef"])["receive_funds"] == (
        "blocked",
        ["operation_not_supported"],
    )
    guard = read(world, child["endpointRef"])["endpoint"]["lifecycleGuard"]
    lifecycle(
        world,
        child["endpointRef"],
        {"operation": "suspend", "reason": "operator_hold", "lifecycleGuard": guard},
    )
    assert families(child["endpointRef"])["send_funds"] == ("blocked", ["endpoint_inactive"])
    r = world.client.get(
        f"/v1/programmable-endpoints/{new_key()}/effective-operation-readiness", headers=AUTH
    )
    assert read_value(r)["result"] == {
        "kind": "not_found",
        "endpoint": None,
        "operationFamilies": [],
    }


@pytest.mark.parametrize("reason", ["operator_hold", "provider_restriction", "compliance_hold"])
def test_suspend_then_resume_with_guards(world: World, reason: str) -> None:
    ep = world.funded(5_000)
    other = world.endpoint()
    ref = ep["endpointRef"]
    guard = read(world, ref)["endpoint"]["lifecycleGuard"]
    r = lifecycle(world, ref, {"operation": "suspend", "reason": reason, "lifecycleGuard": guard})
    out = success_body(r, 200)
    assert out["command"] == {
        "occurrence": "first_accepted",
        "lifecycleStatus": "applied",
        "replayed": False,
    }
    value = check_read_shape(out["endpoint"], "Accounts")
    assert set(value) == SCOPE | {"result"}
    assert value["result"]["kind"] == "applied"
    applied = value["result"]["applied"]
    assert applied["endpointRef"] == ref
    assert (applied["previousPosture"], applied["currentPosture"]) == ("active", "suspended")
    assert (applied["previousStateVersion"], applied["currentStateVersion"]) == (1, 2)
    assert applied["reason"] == reason
    new_guard = applied["lifecycleGuard"]
    assert new_guard["stateVersion"] == 2 and new_guard != guard
    # suspended: readable, but refuses new operations
    assert read(world, ref)["endpoint"]["lifecycleGuard"] == new_guard
    problem(
        world.client.post(
            "/v1/transfers", json=world.transfer_body(ep, other, 1), headers=write_headers()
        ),
        409,
        "Conflict",
        "conflict-EndpointSuspended",
    )
    problem(
        world.client.post(
            "/v1/transfers", json=world.transfer_body(other, ep, 1), headers=write_headers()
        ),
        409,
        "Conflict",
        "conflict-EndpointSuspended",
    )
    credit = {
        "accountRef": ep["accountRef"],
        "endpointRef": ref,
        "holdingRef": ep["holdingRef"],
        "valueUnit": NGN,
        "amountMinorUnits": "1",
    }
    problem(
        world.client.post("/v1/sandbox/inbound-credits", json=credit, headers=write_headers()),
        409,
        "Conflict",
        "conflict-EndpointSuspended",
    )
    assert (
        world.client.get(
            f"/v1/balances/current?accountRef={ep['accountRef']}&endpointRef={ref}", headers=AUTH
        ).status_code
        == 200
    )
    # resume
    r = lifecycle(
        world,
        ref,
        {"operation": "resume", "reason": "operator_cleared", "lifecycleGuard": new_guard},
    )
    applied = success_body(r, 200)["endpoint"]["value"]["result"]["applied"]
    assert (applied["previousPosture"], applied["currentPosture"]) == ("suspended", "active")
    assert applied["currentStateVersion"] == 3
    assert (
        world.client.post(
            "/v1/transfers", json=world.transfer_body(ep, other, 1), headers=write_headers()
        ).status_code
        == 202
    )


def test_stale_guard_is_409_and_never_applied(world: World) -> None:
    ref = world.endpoint()["endpointRef"]
    old = read(world, ref)["endpoint"]["lifecycleGuard"]
    lifecycle(
        world, ref, {"operation": "suspend", "reason": "operator_hold", "lifecycleGuard": old}
    )
    current = read(world, ref)["endpoint"]["lifecycleGuard"]
    r = lifecycle(
        world, ref, {"operation": "resume", "reason": "operator_cleared", "lifecycleGuard": old}
    )
    problem(r, 409, "Conflict", "conflict-StaleLifecycleGuard")
    forged = {"stateVersion": current["stateVersion"], "fingerprint": old["fingerprint"]}
    r = lifecycle(
        world, ref, {"operation": "resume", "reason": "operator_cleared", "lifecycleGuard": forged}
    )
    problem(r, 409, "Conflict", "conflict-StaleLifecycleGuard")
    assert world.state.directory.endpoints[ref].posture == "suspended"


def test_transition_from_the_wrong_posture_is_409(world: World) -> None:
    ref = world.endpoint()["endpointRef"]
    guard = read(world, ref)["endpoint"]["lifecycleGuard"]
    r = lifecycle(
        world, ref, {"operation": "resume", "reason": "operator_cleared", "lifecycleGuard": guard}
    )
    problem(r, 409, "Conflict", "conflict-LifecycleTransitionRejected")


REFUSED = (
    "policyFingerprint",
    "expectedStateVersion",
    "expectedPolicyFingerprint",
    "commandRef",
    "providerRefs",
    "topologyRefs",
    "obligationRefs",
)


@pytest.mark.parametrize(
    ("body", "add_guard"),
    [
        ({"operation": "archive", "reason": "operator_hold"}, True),
        ({"operation": "suspend", "reason": "operator_cleared"}, True),
        ({"operation": "resume", "reason": "operator_hold"}, True),
        ({"operation": "suspend", "reason": "operator_hold"}, False),
        (
            {
                "operation": "suspend",
                "reason": "operator_hold",
                "lifecycleGuard": {"stateVersion": "1", "fingerprint": "x"},
            },
            False,
        ),
        *[
            ({"operation": "suspend", "reason": "operator_hold", name: "x"}, True)
            for name in REFUSED
        ],
    ],
)
def test_bad_lifecycle_commands_are_400(
    world: World, body: dict[str, Any], add_guard: bool
) -> None:
    ref = world.endpoint()["endpointRef"]
    if add_guard:
        body = {**body, "lifecycleGuard": read(world, ref)["endpoint"]["lifecycleGuard"]}
    problem(lifecycle(world, ref, body), 400, "InvalidInput", "invalid-Input")
    assert world.state.directory.endpoints[ref].posture == "active"


def test_lifecycle_unknown_endpoint_is_404(world: World) -> None:
    guard = {"stateVersion": 1, "fingerprint": "fp:endpoint-lifecycle-guard:00"}
    r = lifecycle(
        world,
        new_key(),
        {"operation": "suspend", "reason": "operator_hold", "lifecycleGuard": guard},
    )
    problem(r, 404, "NotFound", "not-found-ResourceMissing")


def test_lifecycle_replay_says_replayed_and_applies_once(world: World) -> None:
    with playing(world, PRESETS["recon"]):
        _lifecycle_replay_says_replayed_and_applies_once(world)


def _lifecycle_replay_says_replayed_and_applies_once(world: World) -> None:
    ref = world.endpoint()["endpointRef"]
    guard = read(world, ref)["endpoint"]["lifecycleGuard"]
    body = {"operation": "suspend", "reason": "operator_hold", "lifecycleGuard": guard}
    key = new_key()
    first = lifecycle(world, ref, body, key).json()
    again = lifecycle(world, ref, body, key)
    assert again.status_code == 200
    j = again.json()
    assert j["body"]["command"]["replayed"] is True
    assert j["body"]["endpoint"] == first["body"]["endpoint"]
    assert world.state.directory.endpoints[ref].state_version == 2


# -- a provider that answers every replayed write with `body.replay` (write_replay) ---------


def _replay_record(response: Any, subject_member: str) -> str:
    """The replay record's shape (the spec's, as for transfers); returns its subject ref."""
    j = response.json()
    assert j == {
        "status": response.status_code,
        "body": {"replay": j["body"]["replay"]},
        "evidence": [],
    }
    replay = j["body"]["replay"]
    assert set(replay) == {"intakeRef", "envelopeRef", "occurrence", subject_member}
    assert re.fullmatch(r"operation-ingress-intake:[0-9a-f-]{36}", replay["intakeRef"])
    assert replay["occurrence"] == "ReplayAccepted"
    ref: str = replay[subject_member]
    return ref


def test_every_write_replays_an_endpoint_create_as_a_replay_record(world: World) -> None:
    with playing(world, PRESETS["standard"]):
        key, body = new_key(), create_body()
        first = world.client.post(
            "/v1/programmable-endpoints", json=body, headers=write_headers(key)
        )
        again = world.client.post(
            "/v1/programmable-endpoints", json=body, headers=write_headers(key)
        )
        assert again.status_code == 200
        made = first.json()["body"]["endpoint"]["value"]["endpointRef"]
        assert _replay_record(again, "endpointRef") == made
        assert len(world.state.directory.endpoints) == 1


def test_every_write_replays_a_lifecycle_command_as_a_replay_record(world: World) -> None:
    with playing(world, PRESETS["standard"]):
        ref = world.endpoint()["endpointRef"]
        guard = read(world, ref)["endpoint"]["lifecycleGuard"]
        body = {"operation": "suspend", "reason": "operator_hold", "lifecycleGuard": guard}
        key = new_key()
        assert lifecycle(world, ref, body, key).status_code == 200
        again = lifecycle(world, ref, body, key)
        assert again.status_code == 200 and _replay_record(again, "endpointRef") == ref
        assert world.state.directory.endpoints[ref].state_version == 2
