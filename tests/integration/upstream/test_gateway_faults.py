"""The gateway client under the sandbox's fault injection: converge, fail fast, never twice."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker
from structlog.testing import capture_logs

from reconciliation.transfers.outbound import StoreIdempotencyKeys
from sandbox.server import SandboxServer
from tests.integration.upstream.conftest import (
    FAST,
    GATEWAY_KEY,
    NGN,
    Control,
    Counting,
    available,
    funded,
    new_endpoint,
)
from upstream import (
    Destination,
    Forbidden,
    GatewayClient,
    HoldingAddress,
    IdempotencyConflict,
    MemoryIdempotencyKeys,
    NotFound,
    RateLimited,
    RetryPolicy,
    TransferAccepted,
    TransferReplayed,
    TransferRequest,
    Unauthorized,
    Unavailable,
)
from upstream.wire.replays import WriteReplayed


def _transfer(source: HoldingAddress, dest: HoldingAddress, amount: int) -> TransferRequest:
    return TransferRequest(
        source=source,
        destination=Destination.internal(dest),
        value_unit=NGN,
        amount_minor_units=amount,
    )


class FixedKey:
    """Hands out one key whatever the material: lets a test replay or misuse a key on purpose."""

    def __init__(self) -> None:
        self.key = uuid.uuid4()

    def key_for(self, operation: str, material: Mapping[str, object]) -> uuid.UUID:
        return self.key

    def sent(self, key: uuid.UUID) -> None:
        pass

    def completed(
        self,
        key: uuid.UUID,
        outcome: str,
        result_ref: str | None,
        *,
        http_status: int | None = None,
    ) -> None:
        pass


def test_reads_converge_through_5xx_bad_json_and_dropped_connections(
    gateway: GatewayClient, control: Control, wire: Counting
) -> None:
    control.fault("GET /v1/environment", "error_5xx", count=2)
    assert gateway.environment().value.is_sandbox
    assert wire.count("/v1/environment") == 3
    holding = new_endpoint(gateway)
    control.fault("GET /v1/balances/current", "malformed_json", count=2)
    gateway.balance(holding.account_ref, holding.endpoint_ref)
    assert wire.count("/v1/balances/current") == 3
    control.fault("GET /v1/programmable-endpoints", "drop_connection", count=2)
    assert len(list(gateway.iter_programmable_endpoints())) == 1
    assert wire.count("/v1/programmable-endpoints", "GET") == 3


def test_reads_converge_under_a_random_fault_rate(gateway: GatewayClient, control: Control) -> None:
    holding = new_endpoint(gateway)
    control.fault("*", "error_5xx", rate=0.3)
    for _ in range(20):
        snap = gateway.balance(holding.account_ref, holding.endpoint_ref)
        assert snap.value.holding_balances[0].settled_minor_units == 0


def test_429_waits_for_retry_after(gateway: GatewayClient, control: Control) -> None:
    control.fault("GET /v1/environment", "rate_limit_429", count=1, seconds=1)
    started = time.monotonic()
    gateway.environment()
    assert time.monotonic() - started >= 1.0


def test_429_longer_than_the_deadline_is_handed_to_the_caller(
    sandbox: SandboxServer, control: Control
) -> None:
    control.fault("GET /v1/environment", "rate_limit_429", count=1, seconds=30)
    client = GatewayClient(sandbox.base_url, GATEWAY_KEY, retry=RetryPolicy(deadline=2.0))
    with pytest.raises(RateLimited) as caught:
        client.environment()
    assert caught.value.retry_after == 30.0


def test_slow_answers_time_out_and_the_call_respects_its_deadline(
    sandbox: SandboxServer, control: Control
) -> None:
    control.fault("GET /v1/environment", "slow", seconds=1.0)
    client = GatewayClient(
        sandbox.base_url,
        GATEWAY_KEY,
        timeout=httpx.Timeout(0.3),
        retry=RetryPolicy(max_attempts=10, base_delay=0.01, deadline=1.0),
    )
    with pytest.raises(Unavailable) as caught:
        client.environment()
    # Each attempt lasts its 0.3 s timeout (or what is left of the second): the deadline, not
    # the ten attempts allowed, ended the call.
    assert 1 <= caught.value.attempts <= 4, caught.value.attempts
    assert "timed out" in str(caught.value) or "deadline" in str(caught.value)


def test_401_fails_fast_with_a_clear_message(sandbox: SandboxServer, wire: Counting) -> None:
    client = GatewayClient(sandbox.base_url, "ak_test_not-a-key", transport=wire, retry=FAST)
    with pytest.raises(Unauthorized) as caught:
        client.environment()
    assert len(wire.requests) == 1
    assert "did not accept the credentials" in str(caught.value)
    assert "stray spaces" in str(caught.value)
    assert "ak_test_not-a-key" not in str(caught.value)


def test_403_fails_fast_naming_the_capability(
    sandbox: SandboxServer, control: Control, wire: Counting
) -> None:
    control.add_key("ak_test_readonly", ["EnvironmentStatusRead", "TransferStatusRead"])
    client = GatewayClient(sandbox.base_url, "ak_test_readonly", transport=wire, retry=FAST)
    assert client.environment().value.is_sandbox
    addr = HoldingAddress(
        account_ref=uuid.uuid4(), endpoint_ref=uuid.uuid4(), holding_ref=uuid.uuid4()
    )
    with pytest.raises(Forbidden) as caught:
        client.create_transfer(_transfer(addr, addr, 10))
    assert caught.value.capability == "TransferCreate"
    assert "TransferCreate" in str(caught.value) and caught.value.evidence
    assert wire.count("/v1/transfers") == 1


def test_an_idempotent_replay_moves_nothing_twice(
    sandbox: SandboxServer, gateway: GatewayClient, control: Control
) -> None:
    source = funded(gateway, control, 10_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    client = GatewayClient(sandbox.base_url, GATEWAY_KEY, idempotency=FixedKey())
    first = client.create_transfer(_transfer(source, dest, 4_000))
    again = client.create_transfer(_transfer(source, dest, 4_000))
    assert isinstance(first, TransferAccepted) and isinstance(again, TransferReplayed)
    assert again.transfer_ref == first.transfer_ref and again.evidence == ()
    assert available(gateway, source) == 6_000
    with pytest.raises(IdempotencyConflict) as caught:
        client.create_transfer(_transfer(source, dest, 5_000))
    assert "already used" in str(caught.value)
    assert "different request material" in str(caught.value)
    assert available(gateway, source) == 6_000


def test_an_answer_lost_after_processing_is_retried_under_the_same_key(
    gateway: GatewayClient, control: Control, wire: Counting, keys: MemoryIdempotencyKeys
) -> None:
    source = funded(gateway, control, 10_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    control.fault("POST /v1/transfers", "drop_connection", count=1, when="after")
    outcome = gateway.create_transfer(_transfer(source, dest, 2_500))
    assert isinstance(outcome, TransferReplayed)
    sent = [r.headers["Idempotency-Key"] for r in wire.requests if r.url.path == "/v1/transfers"]
    assert len(sent) == 2 and len(set(sent)) == 1
    assert available(gateway, source) == 7_500
    assert keys.entries[outcome.idempotency_key].state == "done"


class Crash(BaseException):
    """The process dying right after the request went out (not an Exception: nothing catches it)."""


class DieAfterSending(httpx.HTTPTransport):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        response.read()
        raise Crash


def test_a_write_killed_after_sending_reuses_its_key_on_rerun(
    sandbox: SandboxServer,
    gateway: GatewayClient,
    control: Control,
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 6: a write killed after it was sent is re-run under the same key, so nothing moves
    twice."""
    source = funded(gateway, control, 10_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    request = _transfer(source, dest, 3_000)

    dying = GatewayClient(
        sandbox.base_url,
        GATEWAY_KEY,
        idempotency=StoreIdempotencyKeys(session_factory),
        transport=DieAfterSending(),
    )
    with pytest.raises(Crash):
        dying.create_transfer(request)
    assert available(gateway, source) == 7_000  # it did reach the gateway

    # The rerun: a new process, a new client, the same store.
    wire = Counting()
    store = StoreIdempotencyKeys(session_factory)
    rerun = GatewayClient(sandbox.base_url, GATEWAY_KEY, idempotency=store, transport=wire)
    outcome = rerun.create_transfer(request)
    assert isinstance(outcome, TransferReplayed)
    assert available(gateway, source) == 7_000
    row = store.find(outcome.idempotency_key)
    assert row is not None and row.state == "done" and row.result_ref == str(outcome.transfer_ref)
    assert row.sent_at is not None and row.response_status == 202


def test_no_credential_in_any_log_line_or_message(sandbox: SandboxServer, control: Control) -> None:
    """Invariant 8: no API key or secret reaches a log line or an error message."""
    control.fault("GET /v1/environment", "error_5xx", count=1)
    client = GatewayClient(sandbox.base_url, GATEWAY_KEY, retry=FAST)
    with capture_logs() as logs:
        client.environment()
        with pytest.raises(NotFound) as caught:
            client.transfer_status(uuid.uuid4())
    events = {e["event"] for e in logs}
    assert {"upstream.request", "upstream.retry"} <= events
    assert GATEWAY_KEY not in repr(logs) and GATEWAY_KEY not in repr(client)
    assert all("headers" not in e for e in logs)
    assert GATEWAY_KEY not in str(caught.value) and GATEWAY_KEY not in repr(caught.value)


def test_a_replayed_lifecycle_command_applies_once(
    sandbox: SandboxServer, gateway: GatewayClient
) -> None:
    holding = new_endpoint(gateway)
    read = gateway.get_programmable_endpoint(holding.endpoint_ref).value.endpoint
    assert read is not None and read.lifecycle_guard is not None
    client = GatewayClient(sandbox.base_url, GATEWAY_KEY, idempotency=FixedKey())
    first = client.suspend_endpoint(holding.endpoint_ref, read.lifecycle_guard)
    again = client.suspend_endpoint(holding.endpoint_ref, read.lifecycle_guard)
    assert not isinstance(first, WriteReplayed) and not first.value.replayed
    # Either replay the provider may choose: the first answer marked replayed, or a record.
    if isinstance(again, WriteReplayed):
        assert again.subject_ref in (holding.endpoint_ref, None)
    else:
        assert again.value.replayed
        assert again.value.current_state_version == first.value.current_state_version
    after = gateway.get_programmable_endpoint(holding.endpoint_ref).value.endpoint
    assert after is not None and after.lifecycle_guard == first.value.lifecycle_guard
