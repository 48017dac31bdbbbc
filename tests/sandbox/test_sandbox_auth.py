"""Gateway section 5 (authentication) and the 401/403 rows of section 7; company 401."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox import config as c
from tests.sandbox.sandbox_helpers import AUTH, COMPANY, World, is_uuid, new_key, problem

REF = "6f1c2a34-0000-4000-8000-000000000abc"

# (method, path, capability, is write): every operation of gateway-api.md section 4.
OPERATIONS: list[tuple[str, str, str, bool]] = [
    ("POST", "/v1/transfers", c.TRANSFER_CREATE, True),
    ("POST", "/v1/transfers/quote", c.TRANSFER_QUOTE_READ, False),
    ("GET", f"/v1/transfers/{REF}/status", c.TRANSFER_STATUS_READ, False),
    ("POST", "/v1/programmable-endpoints", c.ENDPOINT_CREATE, True),
    ("GET", "/v1/programmable-endpoints", c.ENDPOINT_LIST, False),
    ("GET", f"/v1/programmable-endpoints/{REF}", c.ENDPOINT_READ, False),
    (
        "GET",
        f"/v1/programmable-endpoints/{REF}/effective-operation-readiness",
        c.ENDPOINT_READ,
        False,
    ),
    ("POST", f"/v1/programmable-endpoints/{REF}/lifecycle", c.ENDPOINT_LIFECYCLE, True),
    ("POST", "/v1/receiving-endpoints", c.RECEIVING_CREATE, True),
    ("GET", "/v1/receiving-endpoints/current", c.RECEIVING_READ, False),
    ("GET", "/v1/environment", c.ENVIRONMENT_READ, False),
    ("GET", "/v1/balances/current", c.BALANCE_READ, False),
    ("GET", "/v1/balances/activity", c.ACTIVITY_READ, False),
    ("POST", "/v1/sandbox/inbound-credits", c.INBOUND_CREDIT_CREATE, True),
]


def call(world: World, method: str, path: str, headers: dict[str, str]) -> Any:
    if method == "GET":
        return world.client.get(path, headers=headers)
    return world.client.post(path, content=b"{}", headers=headers)


@pytest.mark.parametrize(("method", "path", "capability", "write"), OPERATIONS)
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer ",
        "Bearer ak_live_recon",
        "Bearer ak_test_unknown",
        "Basic ak_test_recon",
        "ak_test_recon",
    ],
)
def test_unusable_key_is_401_before_anything_else(
    world: World, method: str, path: str, capability: str, write: bool, authorization: str | None
) -> None:
    # No Idempotency-Key and an empty body: 401 must still come first.
    headers = {} if authorization is None else {"Authorization": authorization}
    j = problem(
        call(world, method, path, headers), 401, "Unauthorized", "unauthorized-PermissionDenied"
    )
    assert j["problem"]["message"] == "PermissionDenied"
    assert j["evidence"] == [] and j["problem"]["evidence"] == []


def test_unknown_gateway_path_still_authenticates_first(world: World) -> None:
    problem(
        world.client.get("/v1/no-such-thing"), 401, "Unauthorized", "unauthorized-PermissionDenied"
    )
    problem(
        world.client.get("/v1/no-such-thing", headers=AUTH),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )


@pytest.mark.parametrize(("method", "path", "capability", "write"), OPERATIONS)
def test_key_lacking_the_capability_is_403(
    world: World, method: str, path: str, capability: str, write: bool
) -> None:
    world.state.keys["ak_test_limited"] = c.ALL_CAPABILITIES - {capability}
    headers = {"Authorization": "Bearer ak_test_limited"}
    j = problem(call(world, method, path, headers), 403, "Forbidden", "forbidden-PermissionDenied")
    assert j["problem"]["message"] == "PermissionDenied"
    # evidence lists receipts
    assert len(j["evidence"]) == 1 and is_uuid(j["evidence"][0]["receiptRef"])
    assert j["problem"]["evidence"][0]["receiptRef"] == j["evidence"][0]["receiptRef"]


@pytest.mark.parametrize(("method", "path", "capability", "write"), OPERATIONS)
def test_key_with_only_that_capability_passes_the_gate(
    world: World, method: str, path: str, capability: str, write: bool
) -> None:
    world.state.keys["ak_test_single"] = frozenset({capability})
    headers = {"Authorization": "Bearer ak_test_single"}
    if write:
        headers["Idempotency-Key"] = new_key()
    r = call(world, method, path, headers)
    assert r.status_code not in (401, 403), r.text


@pytest.mark.parametrize(("method", "path", "capability", "write"), [o for o in OPERATIONS if o[3]])
@pytest.mark.parametrize("key", [None, "", "not-a-uuid"])
def test_write_without_a_usable_idempotency_key_is_400(
    world: World, method: str, path: str, capability: str, write: bool, key: str | None
) -> None:
    headers = dict(AUTH)
    if key is not None:
        headers["Idempotency-Key"] = key
    problem(call(world, method, path, headers), 400, "InvalidInput", "invalid-Input")


def test_capabilities_are_configurable_per_key_through_the_control_api(world: World) -> None:
    r = world.client.post(
        "/_sandbox/keys", json={"key": "ak_test_reader", "capabilities": [c.ENVIRONMENT_READ]}
    )
    assert r.status_code == 201
    reader = {"Authorization": "Bearer ak_test_reader"}
    assert world.client.get("/v1/environment", headers=reader).status_code == 200
    assert world.client.get("/v1/programmable-endpoints", headers=reader).status_code == 403
    bad = world.client.post("/_sandbox/keys", json={"key": "ak_live_x"})
    assert bad.status_code == 400


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-API-Key": COMPANY["X-API-Key"]},
        {"X-App-Id": COMPANY["X-App-Id"]},
        {**COMPANY, "X-API-Key": "ck_test_wrong"},
        {**COMPANY, "X-API-Key": " " + COMPANY["X-API-Key"]},
        {**COMPANY, "X-App-Id": "6f1c2a34-0000-4000-8000-000000000000"},
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/company/v1/webhooks/register"),
        ("GET", "/company/v1/webhooks"),
        ("GET", "/company/v1/accounts/name-enquiry?accountNumber=0123456789"),
    ],
)
def test_company_wrong_credentials_are_401_in_the_envelope(
    world: World, headers: dict[str, str], method: str, path: str
) -> None:
    r = call(world, method, path, headers)
    assert r.status_code == 401
    j = r.json()
    assert set(j) == {"success", "message", "data", "timestamp"}
    assert j["success"] is False and j["data"] is None and "Unauthorized" in j["message"]
