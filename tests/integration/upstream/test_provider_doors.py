"""One way in, for the actions that ask the provider for something: each, through each door it
has, leaves exactly one audit row naming who acted and the door; a refused one leaves none.

`recon transfer create|track`, `recon endpoints suspend|resume`, `recon credit simulate` and
`recon webhooks register|rotate` through the CLI's runner, `POST /transfers` and `POST
/transfers/{ref}/track` through the real app; all against a real sandbox over HTTP, on both
databases. A transfer's row is written with its intent, before the request goes out: a request
the gateway refuses or denies afterwards keeps its row, and its intent says what became of it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import load_settings
from recon.cli.main import cli
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import AuditEvent, Holding, TransferIntent
from sandbox.server import SandboxServer
from tests.integration.reconciliation.builders import Store
from tests.integration.upstream.conftest import Control, funded, new_endpoint
from upstream import (
    Destination,
    GatewayClient,
    HoldingAddress,
    TransferAccepted,
    TransferRequest,
    ValueUnit,
)

ADMIN = {"Authorization": "Bearer admin-token-for-tests-0123456789"}

Row = tuple[str, str | None, str, str, str | None]


@pytest.fixture
def env(base_env: dict[str, str], db_url: str, sandbox: SandboxServer) -> dict[str, str]:
    """recon pointed at the sandbox (gateway and company API) and at this test's store."""
    return base_env | {
        "DATABASE_URL": db_url,
        "RECON_GATEWAY_URL": sandbox.base_url,
        "RECON_COMPANY_URL": sandbox.base_url,
        "RECON_LOG_FORMAT": "console",
        # Without --by, the actor is the user running the command, as the system names it.
        "LOGNAME": "oncall-shell",
    }


@pytest.fixture
def store(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    yield make_session_factory(engine)
    engine.dispose()


def trail(store: sessionmaker[Session]) -> list[Row]:
    with store() as s:
        return [
            (e.actor, e.door, e.action, e.subject, e.reason)
            for e in s.scalars(select(AuditEvent).order_by(AuditEvent.id))
        ]


def intents(store: sessionmaker[Session]) -> dict[uuid.UUID, TransferIntent]:
    with store() as s:
        return {i.idempotency_key: i for i in s.scalars(select(TransferIntent))}


def _arg(h: HoldingAddress) -> str:
    return f"{h.account_ref}:{h.endpoint_ref}:{h.holding_ref}"


def made_elsewhere(gateway: GatewayClient, source: HoldingAddress, to: HoldingAddress) -> uuid.UUID:
    """A transfer some other system asked the gateway for: recon never saw it asked for."""
    made = gateway.create_transfer(
        TransferRequest(
            source=source,
            destination=Destination.internal(to),
            value_unit=ValueUnit.fiat("NGN"),
            amount_minor_units=55,
        )
    )
    assert isinstance(made, TransferAccepted)
    return made.transfer_ref


def _key_in(output: str) -> uuid.UUID:
    (line,) = [x for x in output.splitlines() if x.startswith("idempotency key: ")]
    return uuid.UUID(line.removeprefix("idempotency key: "))


def test_every_cli_provider_action_leaves_one_row_from_the_cli(
    env: dict[str, str],
    store: sessionmaker[Session],
    gateway: GatewayClient,
    control: Control,
    sandbox: SandboxServer,
) -> None:
    def run(*args: str, code: int = 0, **more: str) -> str:
        result = CliRunner().invoke(cli, list(args), env=env | more, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    source = funded(gateway, control, 50_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    move = ["--from", _arg(source), "--to", _arg(dest)]
    # The source is a holding recon knows, by its account number; the destination is not yet.
    builder = Store(store)
    known = builder.holding(name="ADA OBI STORES")
    with store.begin() as s:
        s.get_one(Holding, known.id).holding_ref = source.holding_ref

    sent = _key_in(
        run("transfer", "create", "--yes", *move, "--amount-minor", "10000", "--by", "ana")
    )
    # The trail names the holding as people do, its ref beside it as evidence.
    reason = trail(store)[0][4]
    assert reason == (
        f"100.00 NGN from holding {builder.numbers[known.id]} ADA OBI STORES "
        f"(holdingRef {source.holding_ref}) "
        f"to holding {dest.holding_ref}"
    ), reason
    denied = _key_in(
        run("transfer", "create", "--yes", *move, "--amount-minor", "10000000", code=1)
    )
    # The answer lost (every attempt a 5xx): the intent and its row are written, and the rerun,
    # by whoever, completes the same decision under the same key, adding no row.
    control.fault("POST /v1/transfers", "error_5xx", count=4)
    lost = ["transfer", "create", "--yes", *move, "--amount-minor", "2000"]
    assert "Run the same command again" in run(*lost, "--by", "ana", code=3)
    resent = _key_in(run(*lost, "--by", "bo"))
    other = made_elsewhere(gateway, source, dest)
    run("transfer", "track", str(other), "--by", "ana")
    run("transfer", "track", str(other), "--by", "ana")
    endpoint = str(source.endpoint_ref)
    run("endpoints", "suspend", endpoint, "--reason", "compliance_hold", "--by", "ana")
    run("endpoints", "resume", endpoint, "--by", "ana")
    credit = ["credit", "simulate", "--to", _arg(source), "--amount-minor", "700"]
    (simulation,) = re.findall(r"accepted: simulation (\S+) ", run(*credit, "--by", "ana"))
    run("webhooks", "register", "--by", "ana")
    run("webhooks", "register", "--by", "ana")
    run("webhooks", "rotate", "--by", "ana")
    rows = trail(store)

    # Refused before anything was asked, or by the provider where recon keeps nothing before
    # the answer: no row.
    simulations = len(sandbox.state.simulations)
    assert "say who acts" in run(*credit, "--by", " ", code=1)
    assert len(sandbox.state.simulations) == simulations
    wrong_kind = ["credit", "simulate", "--to", _arg(dest), "--amount-minor", "700"]
    assert "receive posture" in run(*wrong_kind, "--by", "ana", code=1)
    assert "no such resource" in run("transfer", "track", str(uuid.uuid4()), code=1)
    unknown = str(uuid.uuid4())
    assert unknown in run("endpoints", "suspend", unknown, "--by", "ana", code=1)
    company_down = {"RECON_COMPANY_URL": "http://127.0.0.1:9"}
    run("webhooks", "rotate", "--by", "ana", "--wait", "0", code=2, **company_down)
    assert trail(store) == rows

    webhooks = list(sandbox.state.webhooks)
    url = "http://127.0.0.1:8000/webhooks/company"
    assert [r[:4] for r in rows] == [
        ("ana", "cli", "requested transfer", f"transfer intent {sent}"),
        ("oncall-shell", "cli", "requested transfer", f"transfer intent {denied}"),
        ("ana", "cli", "requested transfer", f"transfer intent {resent}"),
        ("ana", "cli", "tracked transfer", f"transfer {other}"),
        ("ana", "cli", "tracked transfer", f"transfer {other}"),
        ("ana", "cli", "suspended endpoint", f"endpoint {endpoint}"),
        ("ana", "cli", "resumed endpoint", f"endpoint {endpoint}"),
        ("ana", "cli", "simulated inbound credit", f"holding {source.holding_ref}"),
        ("ana", "cli", "registered webhook", f"webhook {webhooks[0]}"),
        ("ana", "cli", "registered webhook", f"webhook {webhooks[0]}"),
        ("ana", "cli", "rotated webhook secret", f"webhook {webhooks[1]}"),
    ]
    named = f"{builder.numbers[known.id]} ADA OBI STORES (holdingRef {source.holding_ref})"
    assert [r[4] for r in rows] == [
        f"100.00 NGN from holding {named} to holding {dest.holding_ref}",
        f"100,000.00 NGN from holding {named} to holding {dest.holding_ref}",
        f"20.00 NGN from holding {named} to holding {dest.holding_ref}",
        "newly followed (origin imported)",
        "already followed: polled now",
        "compliance_hold: active -> suspended (state version 1 -> 2)",
        "operator_cleared: suspended -> active (state version 2 -> 3)",
        f"7.00 NGN: simulation {simulation}",
        f"registered now ({url})",
        f"already registered: none created ({url})",
        f"the older secrets stay accepted for 24 h ({url})",
    ]
    # The rows say who decided; the intents they name say what became of each request.
    outcomes = {key: i.outcome for key, i in intents(store).items()}
    assert outcomes == {sent: "reserved", denied: "denied", resent: "reserved"}


@pytest.fixture
def web(env: dict[str, str]) -> Iterator[TestClient[Any]]:
    app = create_app(load_settings(env), enqueue=None, self_register=False)
    with TestClient(app) as client:
        yield client


def test_every_api_provider_action_leaves_one_row_from_the_api(
    web: TestClient[Any],
    store: sessionmaker[Session],
    gateway: GatewayClient,
    control: Control,
    sandbox: SandboxServer,
) -> None:
    source = funded(gateway, control, 50_000)
    dest = new_endpoint(gateway, "customer_balance_internal")

    def body(amount: int, **more: object) -> dict[str, object]:
        def holding(h: HoldingAddress) -> dict[str, str]:
            return {
                "accountRef": str(h.account_ref),
                "endpointRef": str(h.endpoint_ref),
                "holdingRef": str(h.holding_ref),
            }

        return {
            "source": holding(source),
            "destination": holding(dest),
            "amountMinorUnits": amount,
            **more,
        }

    def post(path: str, data: dict[str, object] | None, status: int = 200, **headers: str) -> Any:
        answer = web.post(path, json=data, headers={**ADMIN, **headers})
        assert answer.status_code == status, answer.text
        return answer.json()

    key = str(uuid.uuid4())
    sent = post("/transfers", body(10_000, by="bo"), **{"Idempotency-Key": key})
    denied = post("/transfers", body(10**9))  # names no one: all the bearer token says
    same = {**body(5, by="bo"), "destination": body(5)["source"]}
    refused = post("/transfers", same, status=422)
    other = made_elsewhere(gateway, source, dest)
    post(f"/transfers/{other}/track", {"by": "bo"})
    post(f"/transfers/{other}/track", None)
    rows = trail(store)

    # The caller's retry is the same decision: answered from the store, no second row; and
    # requests refused before their intent leave none.
    again = post("/transfers", body(10_000, by="cy"), **{"Idempotency-Key": key})
    assert (again["transferRef"], again["answeredFromStore"]) == (sent["transferRef"], True)
    post("/transfers", body(10_001, by="bo"), status=409, **{"Idempotency-Key": key})
    post("/transfers", body(0, by="bo"), status=400)
    transfers = len(sandbox.state.transfers)
    assert "say who acts" in post("/transfers", body(10_000, by=" "), status=400)["detail"]
    assert len(sandbox.state.transfers) == transfers
    post(f"/transfers/{uuid.uuid4()}/track", {"by": "bo"}, status=404)
    assert trail(store) == rows

    # The gateway's refusal came after the intent: the row stays, and the intent says why.
    rejected = next(i for i in intents(store).values() if i.outcome == "rejected")
    assert rejected.detail is not None and "same holding" in rejected.detail
    assert "same holding" in refused["detail"]
    assert [r[:4] for r in rows] == [
        ("bo", "api", "requested transfer", f"transfer intent {sent['idempotencyKey']}"),
        ("admin token", "api", "requested transfer", f"transfer intent {denied['idempotencyKey']}"),
        ("bo", "api", "requested transfer", f"transfer intent {rejected.idempotency_key}"),
        ("bo", "api", "tracked transfer", f"transfer {other}"),
        ("admin token", "api", "tracked transfer", f"transfer {other}"),
    ]
    assert {i.requested_via for i in intents(store).values()} == {"api"}
