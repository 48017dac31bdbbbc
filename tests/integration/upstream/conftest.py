"""A real sandbox over HTTP, clients pointed at it, and helpers for its control API."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from upstream import (
    CompanyClient,
    CreditRequest,
    GatewayClient,
    HoldingAddress,
    MemoryIdempotencyKeys,
    RetryPolicy,
    ValueUnit,
)
from upstream.wire.endpoints import EndpointRequest

GATEWAY_KEY = "ak_test_recon"
COMPANY_KEY = "ck_test_recon"
APP_ID = "6f1c2a34-0000-4000-8000-00000000c0de"
NGN = ValueUnit.fiat("NGN")
#: Quick retries so fault tests take milliseconds, not seconds; still a real deadline.
FAST = RetryPolicy(max_attempts=8, base_delay=0.01, max_delay=0.05, deadline=20.0)


class Counting(httpx.HTTPTransport):
    """The real HTTP transport, counting what goes out (how many attempts a call made)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return super().handle_request(request)

    def count(self, path_suffix: str, method: str | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if r.url.path.endswith(path_suffix) and method in (None, r.method)
        )


class Control:
    """The sandbox's `/_sandbox` control API, over HTTP like everything else."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=f"{base_url}/_sandbox", timeout=30)

    def fault(self, route: str, kind: str, **extra: Any) -> None:
        r = self.http.post("/faults/routes", json={"route": route, "kind": kind, **extra})
        assert r.status_code == 201, r.text

    def clear_faults(self) -> None:
        self.http.delete("/faults").raise_for_status()

    def add_key(self, key: str, capabilities: list[str] | str) -> None:
        r = self.http.post("/keys", json={"key": key, "capabilities": capabilities})
        assert r.status_code == 201, r.text

    def settle_now(self) -> None:
        self.http.post("/settle-now").raise_for_status()

    def outcome(self, transfer_ref: uuid.UUID, outcome: str) -> None:
        r = self.http.post(
            "/transfers/outcomes",
            json={"transferRef": str(transfer_ref), "outcome": outcome, "now": True},
        )
        assert r.status_code == 200, r.text

    def bulk(self, holdings: int, postings: int) -> list[dict[str, str]]:
        r = self.http.post("/scenarios/bulk", json={"holdings": holdings, "postings": postings})
        assert r.status_code == 201, r.text
        made: list[dict[str, str]] = r.json()["holdings"]
        return made


@pytest.fixture
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(SandboxConfig(transfer_finality_delay_seconds=3600)) as server:
        yield server


@pytest.fixture
def control(sandbox: SandboxServer) -> Iterator[Control]:
    ctl = Control(sandbox.base_url)
    yield ctl
    ctl.http.close()


@pytest.fixture
def wire() -> Counting:
    return Counting()


@pytest.fixture
def keys() -> MemoryIdempotencyKeys:
    return MemoryIdempotencyKeys()


@pytest.fixture
def gateway(
    sandbox: SandboxServer, wire: Counting, keys: MemoryIdempotencyKeys
) -> Iterator[GatewayClient]:
    with GatewayClient(
        sandbox.base_url, GATEWAY_KEY, idempotency=keys, transport=wire, retry=FAST
    ) as client:
        yield client


@pytest.fixture
def company(sandbox: SandboxServer, wire: Counting) -> Iterator[CompanyClient]:
    with CompanyClient(sandbox.base_url, COMPANY_KEY, APP_ID, transport=wire, retry=FAST) as c:
        yield c


def new_endpoint(
    gateway: GatewayClient, template: str = "customer_balance_collection_child"
) -> HoldingAddress:
    """A fresh programmable endpoint's holding."""
    created = gateway.create_programmable_endpoint(
        EndpointRequest(
            template=template, owner_ref=uuid.uuid4(), owner_kind="business-entity", value_unit=NGN
        )
    )
    ep = created.value.endpoint
    assert ep.holding_ref is not None
    return HoldingAddress(
        account_ref=ep.account_ref, endpoint_ref=ep.endpoint_ref, holding_ref=ep.holding_ref
    )


def funded(gateway: GatewayClient, control: Control, amount: int) -> HoldingAddress:
    """A collection-child holding credited with `amount`, its posting and projection landed."""
    holding = new_endpoint(gateway)
    gateway.simulate_inbound_credit(
        CreditRequest(target=holding, value_unit=NGN, amount_minor_units=amount)
    )
    control.settle_now()
    wait_for_available(gateway, holding, amount)
    return holding


def available(gateway: GatewayClient, holding: HoldingAddress) -> int:
    snap = gateway.balance(holding.account_ref, holding.endpoint_ref, holding.holding_ref)
    (hb,) = snap.value.holding_balances
    return hb.available_minor_units


def wait_for_available(gateway: GatewayClient, holding: HoldingAddress, want: int) -> None:
    deadline = time.monotonic() + 10
    while available(gateway, holding) != want:
        assert time.monotonic() < deadline, "balance projection did not catch up"
        time.sleep(0.05)
