"""Company API: webhooks register and list, name enquiry, envelopes and status codes.

The first tests pin our original guesses (the `recon` variant: full envelope, 201, refusals
400); the later ones play every variant the spec's silences allow and check the sandbox
answers as that provider would, and signs deliveries sensibly with any string as a secret.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from litestar.testing import TestClient

from sandbox.app import create_app
from sandbox.state import SandboxState
from sandbox.variants import PRESETS, ProviderVariant
from tests.sandbox.sandbox_helpers import COMPANY, SECRET, Receiver, World, is_ts, sandbox_config

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


def open_world(variant: ProviderVariant) -> Iterator[World]:
    state = SandboxState(sandbox_config(variant=variant))
    with TestClient(create_app(state=state)) as client:
        yield World(state, client)
    state.close()


@pytest.fixture(scope="module")
def _recon_world() -> Iterator[World]:
    yield from open_world(PRESETS["recon"])


@pytest.fixture
def world(_recon_world: World) -> World:
    """Our original guesses, whatever RECON_SANDBOX_VARIANT says: these tests pin them."""
    _recon_world.state.reset()
    return _recon_world


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
        {"url": "http://x.test/h", "eventTypes": ["PAYMENT_RECEIVED"], "secret": ""},
        {"url": "http://x.test/h", "eventTypes": ["PAYMENT_RECEIVED"], "secret": 42},
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


# --- every variant ------------------------------------------------------------------------

#: The presets, plus the choices no preset makes (a bare `{data}` with 200, the other
#: provider's retryPolicy, Retry-After as an HTTP date).
VARIANTS: dict[str, ProviderVariant] = {
    **PRESETS,
    "data-200": dataclasses.replace(
        PRESETS["recon"], name="data-200", company_envelope="data", register_status=200
    ),
    "strict-date": dataclasses.replace(
        PRESETS["sparse"],
        name="strict-date",
        retry_policy_fields="strict-other",
        retry_after_form="http-date",
    ),
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def _variant_world(request: pytest.FixtureRequest) -> Iterator[World]:
    yield from open_world(VARIANTS[request.param])


@pytest.fixture
def played(_variant_world: World) -> World:
    """A fresh world playing one variant."""
    _variant_world.state.reset()
    return _variant_world


def success_data(r: Any, variant: ProviderVariant, status: int) -> Any:
    """`data` of a webhook operation's success body, checking the variant's shape."""
    assert r.status_code == status, r.text
    if variant.company_envelope == "data":
        assert set(r.json()) == {"data"}
        return r.json()["data"]
    return envelope(r, status, True)


def test_register_and_list_answer_as_the_variant_says(played: World) -> None:
    variant = played.state.config.variant
    r = register(played, url="http://a.test/h", eventTypes=["KYC_VERIFIED"], secret=SECRET)
    hook = success_data(r, variant, variant.register_status)
    assert set(hook) == WEBHOOK_FIELDS and hook["status"] == "ACTIVE"
    listed = success_data(played.client.get("/company/v1/webhooks", headers=COMPANY), variant, 200)
    assert [w["webhookId"] for w in listed["webhooks"]] == [hook["webhookId"]]


def test_refusals_use_the_envelope_at_the_variant_status(played: World) -> None:
    variant = played.state.config.variant
    r = register(played, url="not a url", eventTypes=["KYC_VERIFIED"], secret=SECRET)
    assert envelope(r, variant.company_refusal_status, False) is None
    assert "url" in r.json()["message"]
    assert played.state.webhooks == {}
    r = played.client.get("/company/v1/webhooks", params={"status": "nope"}, headers=COMPANY)
    envelope(r, variant.company_refusal_status, False)
    r = played.client.get("/company/v1/accounts/name-enquiry", headers=COMPANY)
    envelope(r, variant.company_refusal_status, False)
    # Credentials are the spec's 401 in every variant.
    r = played.client.get("/company/v1/webhooks", headers={**COMPANY, "X-API-Key": "ck_x"})
    envelope(r, 401, False)


def test_name_enquiry_is_the_full_envelope_in_every_variant(played: World) -> None:
    r = played.client.get(
        "/company/v1/accounts/name-enquiry", params={"accountNumber": "0123456789"}, headers=COMPANY
    )
    assert envelope(r, 200, True) is None


PLAIN_SECRETS = [
    "some-plain-string",
    "whsec_!!not base64!!",
    "c2VjcmV0LWFzLWJhcmUtYmFzZTY0",
    "pässwörd mit Leerzeichen",
    SECRET,
]


def test_any_non_empty_string_is_accepted_as_a_secret(played: World) -> None:
    variant = played.state.config.variant
    for secret in PLAIN_SECRETS:
        r = register(played, url="http://a.test/h", eventTypes=["KYC_VERIFIED"], secret=secret)
        success_data(r, variant, variant.register_status)
    assert len(played.state.webhooks) == len(PLAIN_SECRETS)


def expected_key(secret: str) -> bytes:
    """Documented rule: a `whsec_` secret's decoded base64, any other string's UTF-8 bytes."""
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        except ValueError:
            pass
    return secret.encode()


@pytest.mark.parametrize("secret", PLAIN_SECRETS)
def test_deliveries_are_signed_with_the_documented_key(
    world: World, receiver: Receiver, secret: str
) -> None:
    register(world, url=receiver.url, eventTypes=["PAYMENT_RECEIVED"], secret=secret)
    world.credit(world.endpoint(), 5)
    (got,) = receiver.wait_for(1)
    version, offered = got.headers["webhook-signature"].split(",", 1)
    signed = f"{got.headers['webhook-id']}.{got.headers['webhook-timestamp']}.".encode() + got.body
    mac = hmac.new(expected_key(secret), signed, hashlib.sha256).digest()
    assert version == "v1" and base64.b64decode(offered) == mac


def test_retry_policy_members_are_the_variant_s(played: World) -> None:
    variant = played.state.config.variant
    ours = {"maxAttempts": 3, "initialDelaySeconds": 5, "backoffMultiplier": 2}
    theirs = {"maxRetries": 2, "retryIntervalSeconds": 4}
    base = {"url": "http://a.test/h", "eventTypes": ["KYC_VERIFIED"], "secret": SECRET}
    if variant.retry_policy_fields == "strict-other":
        r = register(played, **base, retryPolicy=ours)
        envelope(r, variant.company_refusal_status, False)
        assert "retryPolicy" in r.json()["message"] and played.state.webhooks == {}
        success_data(register(played, **base, retryPolicy=theirs), variant, variant.register_status)
        (hook,) = played.state.webhooks.values()
        assert played.state.hub.retry_delays(hook) == [4.0, 4.0]
    else:
        success_data(register(played, **base, retryPolicy=ours), variant, variant.register_status)
        (hook,) = played.state.webhooks.values()
        assert played.state.hub.retry_delays(hook) == [5.0, 10.0]


def arm(world: World, **fault: Any) -> None:
    r = world.client.post("/_sandbox/faults/routes", json=fault)
    assert r.status_code == 201, r.text


def retry_after_seconds(r: Any, variant: ProviderVariant) -> float:
    """The Retry-After of an answer, checked to be in the variant's form."""
    value = r.headers["retry-after"]
    if variant.retry_after_form == "seconds":
        assert value.isdigit(), value
        return float(value)
    return parsedate_to_datetime(value).timestamp() - time.time()


def test_injected_503_carries_retry_after_when_the_variant_says_so(played: World) -> None:
    variant = played.state.config.variant
    arm(played, route="GET /company/v1/webhooks", kind="error_5xx", count=1, seconds=7)
    arm(played, route="GET /v1/environment", kind="error_5xx", count=1, status=502)
    r = played.client.get("/company/v1/webhooks", headers=COMPANY)
    envelope(r, 503, False)
    if variant.retry_after_on_503:
        assert 5.0 <= retry_after_seconds(r, variant) <= 7.0
    else:
        assert "retry-after" not in r.headers
    # Only a 503 says when to come back.
    assert "retry-after" not in played.client.get("/v1/environment").headers


def test_injected_429_carries_retry_after_in_the_variant_form(played: World) -> None:
    variant = played.state.config.variant
    arm(played, route="GET /company/v1/webhooks", kind="rate_limit_429", count=1, seconds=3)
    r = played.client.get("/company/v1/webhooks", headers=COMPANY)
    envelope(r, 429, False)
    assert 1.0 <= retry_after_seconds(r, variant) <= 3.0
