"""Company API: webhooks register and list, name enquiry, envelopes and status codes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.sandbox_helpers import COMPANY, SECRET, World, is_ts

WEBHOOK_FIELDS = {
    "webhookId",
    "url",
    "eventTypes",
    "status",
    "createdAt",
    "lastTriggered",
    "totalDeliveries",
    "successfulDeliveries",
    "failedDeliveries",
}


def envelope(r: Any, status: int, success: bool) -> Any:
    assert r.status_code == status, r.text
    j = r.json()
    assert set(j) == {"success", "message", "data", "timestamp"}
    assert j["success"] is success and isinstance(j["message"], str) and is_ts(j["timestamp"])
    return j["data"]


def register(world: World, **body: Any) -> Any:
    return world.client.post("/company/v1/webhooks/register", json=body, headers=COMPANY)


def test_register_is_201_with_the_webhook(world: World) -> None:
    r = register(
        world,
        url="https://example.test/hooks",
        eventTypes=["PAYMENT_RECEIVED"],
        secret=SECRET,
        description="recon",
        retryPolicy={"maxAttempts": 3},
    )
    data = envelope(r, 201, True)
    assert set(data) == WEBHOOK_FIELDS
    assert data["webhookId"].startswith("wh_")
    assert data["url"] == "https://example.test/hooks"
    assert data["eventTypes"] == ["PAYMENT_RECEIVED"]
    assert data["status"] == "ACTIVE" and is_ts(data["createdAt"])
    assert data["lastTriggered"] is None
    assert (data["totalDeliveries"], data["successfulDeliveries"], data["failedDeliveries"]) == (
        0,
        0,
        0,
    )


def test_register_inactive(world: World) -> None:
    data = envelope(
        register(
            world, url="http://x.test/h", eventTypes=["KYC_VERIFIED"], secret=SECRET, isActive=False
        ),
        201,
        True,
    )
    assert data["status"] == "INACTIVE"


@pytest.mark.parametrize(
    "body",
    [
        {"eventTypes": ["PAYMENT_RECEIVED"], "secret": SECRET},
        {"url": "not a url", "eventTypes": ["PAYMENT_RECEIVED"], "secret": SECRET},
        {"url": "ftp://x.test/h", "eventTypes": ["PAYMENT_RECEIVED"], "secret": SECRET},
        {"url": "http://x.test/h", "secret": SECRET},
        {"url": "http://x.test/h", "eventTypes": [], "secret": SECRET},
        {"url": "http://x.test/h", "eventTypes": ["SOMETHING"], "secret": SECRET},
        {"url": "http://x.test/h", "eventTypes": ["PAYMENT_RECEIVED"]},
        {"url": "http://x.test/h", "eventTypes": ["PAYMENT_RECEIVED"], "secret": "whsec_!!"},
        {
            "url": "http://x.test/h",
            "eventTypes": ["PAYMENT_RECEIVED"],
            "secret": SECRET,
            "isActive": "yes",
        },
        {
            "url": "http://x.test/h",
            "eventTypes": ["PAYMENT_RECEIVED"],
            "secret": SECRET,
            "retryPolicy": {"maxAttempts": 0},
        },
        {
            "url": "http://x.test/h",
            "eventTypes": ["PAYMENT_RECEIVED"],
            "secret": SECRET,
            "description": 5,
        },
    ],
)
def test_register_validation_is_400_in_the_envelope(world: World, body: dict[str, Any]) -> None:
    assert envelope(register(world, **body), 400, False) is None
    assert world.state.webhooks == {}


def test_register_non_json_is_400(world: World) -> None:
    r = world.client.post("/company/v1/webhooks/register", content=b"[", headers=COMPANY)
    envelope(r, 400, False)


def test_list_with_filters_and_counts(world: World) -> None:
    a = envelope(
        register(world, url="http://a.test/h", eventTypes=["PAYMENT_RECEIVED"], secret=SECRET),
        201,
        True,
    )
    envelope(
        register(
            world,
            url="http://b.test/h",
            eventTypes=["PAYMENT_RECEIVED", "TRANSACTION_FAILED"],
            secret=SECRET,
            isActive=False,
        ),
        201,
        True,
    )
    c = envelope(
        register(world, url="http://c.test/h", eventTypes=["TRANSACTION_FAILED"], secret=SECRET),
        201,
        True,
    )
    world.state.webhooks[c["webhookId"]].status = "SUSPENDED"

    def listing(**params: str) -> Any:
        return envelope(
            world.client.get("/company/v1/webhooks", params=params, headers=COMPANY), 200, True
        )

    data = listing()
    assert set(data) == {"webhooks", "totalCount", "activeCount", "inactiveCount"}
    assert (data["totalCount"], data["activeCount"], data["inactiveCount"]) == (3, 1, 2)
    assert all(set(w) == WEBHOOK_FIELDS for w in data["webhooks"])
    assert [w["webhookId"] for w in listing(status="ACTIVE")["webhooks"]] == [a["webhookId"]]
    assert listing(status="SUSPENDED")["webhooks"][0]["webhookId"] == c["webhookId"]
    assert listing(status="INACTIVE")["totalCount"] == 1
    pr = listing(eventType="PAYMENT_RECEIVED")
    assert (pr["totalCount"], pr["activeCount"], pr["inactiveCount"]) == (2, 1, 1)
    assert listing(eventType="KYC_VERIFIED")["webhooks"] == []
    both = listing(status="ACTIVE", eventType="TRANSACTION_FAILED")
    assert both["totalCount"] == 0


@pytest.mark.parametrize("params", [{"status": "active"}, {"eventType": "NOPE"}])
def test_list_bad_filter_is_400(world: World, params: dict[str, str]) -> None:
    r = world.client.get("/company/v1/webhooks", params=params, headers=COMPANY)
    envelope(r, 400, False)


def test_name_enquiry_test_number(world: World) -> None:
    r = world.client.get(
        "/company/v1/accounts/name-enquiry?accountNumber=0123456789", headers=COMPANY
    )
    assert envelope(r, 200, True) is None


@pytest.mark.parametrize("number", [None, "", "123", "01234567890", "01234x6789", " 012345678"])
def test_name_enquiry_anything_else_is_a_clear_error(world: World, number: str | None) -> None:
    params = {} if number is None else {"accountNumber": number}
    r = world.client.get("/company/v1/accounts/name-enquiry", params=params, headers=COMPANY)
    envelope(r, 400, False)
    assert "10-digit" in r.json()["message"]


def test_unknown_company_path_is_404_in_the_envelope(world: World) -> None:
    envelope(world.client.get("/company/v1/customers", headers=COMPANY), 404, False)
    envelope(world.client.get("/company/v1/customers"), 401, False)
