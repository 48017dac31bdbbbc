"""Shared helpers of the sandbox contract suite (a unique module name: tests have no packages)."""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from litestar.testing import TestClient

from sandbox.config import DEFAULT_APP_ID, DEFAULT_COMPANY_KEY, SandboxConfig
from sandbox.state import SandboxState
from sandbox.variants import ProviderVariant

GATEWAY_KEY = "ak_test_recon"
AUTH = {"Authorization": f"Bearer {GATEWAY_KEY}"}
COMPANY = {"X-API-Key": DEFAULT_COMPANY_KEY, "X-App-Id": DEFAULT_APP_ID}
NGN = {"kind": "fiat", "currency": "NGN"}
SECRET = "whsec_" + base64.b64encode(b"sandbox-contract-suite-secret-32b").decode()
ALL_EVENTS = [
    "PAYMENT_RECEIVED",
    "TRANSACTION_COMPLETED",
    "TRANSACTION_FAILED",
    "ACCOUNT_CREATED",
    "KYC_VERIFIED",
]


def new_key() -> str:
    return str(uuid.uuid4())


def write_headers(key: str | None = None) -> dict[str, str]:
    return {**AUTH, "Idempotency-Key": key or new_key()}


def sandbox_config(**overrides: Any) -> SandboxConfig:
    """Background work off; tests move the clock and run what is due themselves."""
    base: dict[str, Any] = {
        "run_background": False,
        "transfer_finality_delay_seconds": 2.0,
        "projection_lag_seconds": 0.5,
        "inbound_posting_delay_seconds": 0.1,
        "delivery_retry_schedule": (1.0, 2.0, 4.0),
        "delivery_timeout_seconds": 1.0,
        "suspend_after_failures": 5,
    }
    base.update(overrides)
    return SandboxConfig(**base)


@dataclass
class World:
    """A sandbox state plus an in-process client and the helpers every section needs."""

    state: SandboxState
    client: TestClient[Any]

    def advance(self, seconds: float = 0.0) -> None:
        self.state.clock.advance(seconds)
        self.state.run_due()

    def endpoint(
        self, template: str = "customer_balance_collection_child", currency: str = "NGN"
    ) -> dict[str, Any]:
        body = {
            "template": template,
            "owner": {
                "kind": "existing_account_owner",
                "ownerRef": new_key(),
                "ownerKind": "business-entity",
            },
            "valueUnit": {"kind": "fiat", "currency": currency},
        }
        r = self.client.post("/v1/programmable-endpoints", json=body, headers=write_headers())
        assert r.status_code == 200, r.text
        value: dict[str, Any] = r.json()["body"]["endpoint"]["value"]
        return value

    def credit(self, ep: dict[str, Any], amount: int, *, land: bool = True) -> dict[str, Any]:
        body = {
            "accountRef": ep["accountRef"],
            "endpointRef": ep["endpointRef"],
            "holdingRef": ep["holdingRef"],
            "valueUnit": ep["unit"],
            "amountMinorUnits": str(amount),
        }
        r = self.client.post("/v1/sandbox/inbound-credits", json=body, headers=write_headers())
        assert r.status_code == 202, r.text
        if land:
            self.advance(self.state.config.inbound_posting_delay_seconds)
        value: dict[str, Any] = r.json()["body"]["simulation"]["value"]
        return value

    def funded(self, amount: int = 100_000) -> dict[str, Any]:
        """A collection child holding ``amount``, posted and projected."""
        ep = self.endpoint()
        self.credit(ep, amount)
        self.advance(self.state.config.projection_lag_seconds)
        return ep

    def transfer_body(
        self, src: dict[str, Any], dst: dict[str, Any], amount: int
    ) -> dict[str, Any]:
        return {
            "sourceAccountRef": src["accountRef"],
            "sourceEndpointRef": src["endpointRef"],
            "sourceHoldingRef": src["holdingRef"],
            "destination": {
                "kind": "internal-endpoint",
                "accountRef": dst["accountRef"],
                "endpointRef": dst["endpointRef"],
                "holdingRef": dst["holdingRef"],
            },
            "valueUnit": src["unit"],
            "amountMinorUnits": str(amount),
        }

    def balance(self, ep: dict[str, Any]) -> dict[str, Any]:
        r = self.client.get(
            "/v1/balances/current",
            params={"accountRef": ep["accountRef"], "endpointRef": ep["endpointRef"]},
            headers=AUTH,
        )
        assert r.status_code == 200, r.text
        value: dict[str, Any] = r.json()["body"]["value"]["holdingBalances"][0]
        return value

    def register(self, url: str, events: list[str] | None = None, **extra: Any) -> dict[str, Any]:
        body = {
            "url": url,
            "eventTypes": events or ALL_EVENTS,
            "secret": SECRET,
            **extra,
        }
        r = self.client.post("/company/v1/webhooks/register", json=body, headers=COMPANY)
        assert r.status_code == 201, r.text
        data: dict[str, Any] = r.json()["data"]
        return data


@contextmanager
def playing(world: World, variant: ProviderVariant) -> Iterator[World]:
    """The shared world playing `variant` for one test (transfers read it when created)."""
    original = world.state.config
    world.state.config = dataclasses.replace(original, variant=variant)
    try:
        yield world
    finally:
        world.state.config = original


UUID_RE = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
TS_RE = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"


def is_uuid(value: Any) -> bool:
    import re

    return isinstance(value, str) and re.match(UUID_RE, value) is not None


def is_ts(value: Any) -> bool:
    import re

    return isinstance(value, str) and re.match(TS_RE, value) is not None


def check_read_shape(read: dict[str, Any], source: str | None) -> dict[str, Any]:
    """``{value, freshness, visibility, evidence:[{receiptRef, source}]}``: return value."""
    assert set(read) == {"value", "freshness", "visibility", "evidence"}, read.keys()
    assert read["freshness"] == "Current"
    assert read["visibility"] == "Full"
    assert len(read["evidence"]) == 1
    ev = read["evidence"][0]
    assert set(ev) == {"receiptRef", "source"} and is_uuid(ev["receiptRef"])
    if source is not None:
        assert ev["source"] == source
    value: dict[str, Any] = read["value"]
    return value


def success_body(r: Any, status: int) -> dict[str, Any]:
    """The success wrapper ``{status, body, evidence:[{receiptRef}]}``: return body."""
    assert r.status_code == status, r.text
    j = r.json()
    assert set(j) == {"status", "body", "evidence"}, j.keys()
    assert j["status"] == status
    for ev in j["evidence"]:
        assert set(ev) == {"receiptRef"} and is_uuid(ev["receiptRef"])
    body: dict[str, Any] = j["body"]
    return body


def read_value(r: Any, source: str | None = None, status: int = 200) -> dict[str, Any]:
    j = r.json()
    body = success_body(r, status)
    value = check_read_shape(body, source)
    assert j["evidence"] == [{"receiptRef": body["evidence"][0]["receiptRef"]}]
    return value


def problem(r: Any, status: int, kind: str, code: str) -> dict[str, Any]:
    """The error wrapper ``{status, problem:{kind,status,code,message,evidence}, evidence}``."""
    assert r.status_code == status, r.text
    j: dict[str, Any] = r.json()
    assert set(j) == {"status", "problem", "evidence"}, j.keys()
    assert j["status"] == status
    p = j["problem"]
    assert set(p) == {"kind", "status", "code", "message", "evidence"}, p.keys()
    assert (p["kind"], p["status"], p["code"]) == (kind, status, code)
    assert isinstance(p["message"], str) and p["message"]
    return j


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Collects deliveries; answers with ``statuses`` in turn (then 200), after ``delay``."""

    url: str = ""
    received: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, count: int, timeout: float = 5.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.01)
        raise AssertionError(f"expected {count} deliveries, got {len(self.received)}")
