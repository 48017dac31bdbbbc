"""Every keyed write, re-sent after a crash between sending and reading the answer.

The gateway spec shows a replay body (`body.replay`) only for transfer create; a provider may
answer every other write's replay the same way (`write_replay = every-write`) or with the first
answer again (`transfer-only`). Under both, the rerun must find the stored key, settle it, and
return something typed: the object, or `WriteReplayed` naming what the first request made.
Nothing may be done twice.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.transfers.outbound import StoreIdempotencyKeys
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from sandbox.variants import PRESETS
from tests.integration.upstream.conftest import FAST, GATEWAY_KEY, NGN, Control, new_endpoint
from tests.integration.upstream.test_gateway_faults import Crash, DieAfterSending
from upstream import CreditRequest, GatewayClient, HoldingAddress, ReceivingRequest
from upstream.wire.endpoints import EndpointRequest
from upstream.wire.replays import WriteReplayed

#: Each write: (what to send, given a prepared holding) and (what it made, as the sandbox counts).
Send = Callable[[GatewayClient, HoldingAddress], object]
Count = Callable[[SandboxServer, HoldingAddress], int]


def _create_endpoint(client: GatewayClient, _: HoldingAddress, owner: uuid.UUID) -> object:
    return client.create_programmable_endpoint(
        EndpointRequest(
            template="customer_balance_internal",
            owner_ref=owner,
            owner_kind="business-entity",
            value_unit=NGN,
        )
    )


def _suspend(client: GatewayClient, holding: HoldingAddress, guard: Any) -> object:
    return client.suspend_endpoint(holding.endpoint_ref, guard)


def _receiving(client: GatewayClient, _: HoldingAddress, owner: uuid.UUID) -> object:
    return client.create_receiving_endpoint(
        ReceivingRequest(owner_ref=owner, owner_kind="BusinessEntity", value_unit=NGN)
    )


def _credit(client: GatewayClient, holding: HoldingAddress) -> object:
    return client.simulate_inbound_credit(
        CreditRequest(target=holding, value_unit=NGN, amount_minor_units=777)
    )


@pytest.fixture(params=["transfer-only", "every-write"])
def replaying(request: pytest.FixtureRequest) -> Iterator[SandboxServer]:
    """A sandbox answering replays of writes other than transfer create one way or the other."""
    variant = dataclasses.replace(PRESETS["recon"], write_replay=request.param)
    config = SandboxConfig(variant=variant, transfer_finality_delay_seconds=3600)
    with SandboxServer(config) as server:
        yield server


@pytest.fixture
def plain(replaying: SandboxServer) -> Iterator[GatewayClient]:
    with GatewayClient(replaying.base_url, GATEWAY_KEY, retry=FAST) as client:
        yield client


def _crash_then_rerun(
    sandbox: SandboxServer, store: StoreIdempotencyKeys, send: Callable[[GatewayClient], object]
) -> object:
    dying = GatewayClient(
        sandbox.base_url, GATEWAY_KEY, idempotency=store, transport=DieAfterSending()
    )
    with pytest.raises(Crash):
        send(dying)
    with GatewayClient(sandbox.base_url, GATEWAY_KEY, idempotency=store, retry=FAST) as rerun:
        return send(rerun)


def _settled(store: StoreIdempotencyKeys, result: object) -> None:
    key = getattr(result, "idempotency_key", None)
    assert isinstance(key, uuid.UUID), f"no key on {result!r}"
    row = store.find(key)
    assert row is not None and row.state == "done", "the key was left open"
    assert row.sent_at is not None and row.response_status in (200, 202)


def _expect(sandbox: SandboxServer, result: object, made: uuid.UUID) -> None:
    """A record under every-write (naming what was made), the first answer otherwise."""
    if sandbox.state.config.variant.write_replay == "every-write":
        assert isinstance(result, WriteReplayed), result
        assert result.subject_ref == made and result.occurrence == "ReplayAccepted"
        assert result.evidence == ()
    else:
        assert not isinstance(result, WriteReplayed), result


def test_endpoint_create_rerun(
    replaying: SandboxServer, session_factory: sessionmaker[Session]
) -> None:
    store, owner = StoreIdempotencyKeys(session_factory), uuid.uuid4()
    result = _crash_then_rerun(replaying, store, lambda c: _create_endpoint(c, _none(), owner))
    made = [ep for ep in replaying.state.directory.endpoints.values() if ep.owner_ref == str(owner)]
    assert len(made) == 1, "the endpoint was created twice"
    _expect(replaying, result, uuid.UUID(made[0].endpoint_ref))
    _settled(store, result)


def test_lifecycle_rerun(
    replaying: SandboxServer, plain: GatewayClient, session_factory: sessionmaker[Session]
) -> None:
    holding = new_endpoint(plain)
    read = plain.get_programmable_endpoint(holding.endpoint_ref).value.endpoint
    assert read is not None and read.lifecycle_guard is not None
    store = StoreIdempotencyKeys(session_factory)
    result = _crash_then_rerun(
        replaying, store, lambda c: _suspend(c, holding, read.lifecycle_guard)
    )
    ep = replaying.state.directory.endpoints[str(holding.endpoint_ref)]
    assert (ep.posture, ep.state_version) == ("suspended", read.lifecycle_guard.state_version + 1)
    _expect(replaying, result, holding.endpoint_ref)
    if not isinstance(result, WriteReplayed):
        assert result.value.replayed  # type: ignore[attr-defined]
    _settled(store, result)


def test_receiving_endpoint_create_rerun(
    replaying: SandboxServer, session_factory: sessionmaker[Session]
) -> None:
    store, owner = StoreIdempotencyKeys(session_factory), uuid.uuid4()
    result = _crash_then_rerun(replaying, store, lambda c: _receiving(c, _none(), owner))
    made = [ep for ep in replaying.state.directory.endpoints.values() if ep.owner_ref == str(owner)]
    assert len(made) == 1
    _expect(replaying, result, uuid.UUID(made[0].endpoint_ref))
    _settled(store, result)


def test_inbound_credit_rerun(
    replaying: SandboxServer, plain: GatewayClient, session_factory: sessionmaker[Session]
) -> None:
    holding = new_endpoint(plain)
    store = StoreIdempotencyKeys(session_factory)
    result = _crash_then_rerun(replaying, store, lambda c: _credit(c, holding))
    Control(replaying.base_url).settle_now()
    assert len(replaying.state.postings(str(holding.holding_ref))) == 1, "credited twice"
    (simulation,) = replaying.state.simulations
    _expect(replaying, result, uuid.UUID(simulation))
    _settled(store, result)


def _none() -> HoldingAddress:
    return HoldingAddress(
        account_ref=uuid.uuid4(), endpoint_ref=uuid.uuid4(), holding_ref=uuid.uuid4()
    )
