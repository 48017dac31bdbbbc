"""Transfers asked for by `recon transfer create` / `POST /transfers`, or followed by `track`.

End to end against a real sandbox over HTTP and a real store: each request is recorded (intent,
then outcome), the poller follows it to terminal, a denied one is visible at once, and one the
rail holds raises `finality_overdue` once its (short) deadline has passed. Runs under whatever
provider RECON_SANDBOX_VARIANT names, so held and terminal statuses may have any names.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import Settings
from recon.cli.main import cli
from reconciliation import run_pass
from reconciliation.store.models import Alert, Transfer, TransferIntent
from reconciliation.store.types import utcnow
from reconciliation.transfers.intents import intent_fingerprint, record_intent
from reconciliation.transfers.outbound import StoreIdempotencyKeys
from reconciliation.transfers.polling import Backoff
from sandbox.bulk import build_bulk
from sandbox.server import SandboxServer
from upstream.gateway import GatewayClient
from upstream.wire.common import Destination, HoldingAddress, ValueUnit
from upstream.wire.transfers import TransferAccepted, TransferRequest
from workers import Runtime
from workers.actors.transfers import poll_due_transfers

QUICK = Backoff(first_seconds=0.05, cap_seconds=0.1)
ADMIN = {"Authorization": "Bearer admin-token-for-tests-0123456789"}


@pytest.fixture
def worker_env(sandbox_env: dict[str, str], db_url: str) -> dict[str, str]:
    """This test's store, and a finality deadline short enough to pass within the test."""
    return {**sandbox_env, "DATABASE_URL": db_url, "RECON_FINALITY_DEADLINE_SECONDS": "1"}


@pytest.fixture
def holdings(sandbox: SandboxServer) -> tuple[dict[str, str], dict[str, str]]:
    """A funded source holding and a destination, made in the sandbox."""
    source, target = build_bulk(sandbox.state, holdings=2, postings=20, seed=11)
    return source, target


def arg(ref: dict[str, str]) -> str:
    return f"{ref['accountRef']}:{ref['endpointRef']}:{ref['holdingRef']}"


def address(ref: dict[str, str]) -> HoldingAddress:
    return HoldingAddress(
        account_ref=uuid.UUID(ref["accountRef"]),
        endpoint_ref=uuid.UUID(ref["endpointRef"]),
        holding_ref=uuid.UUID(ref["holdingRef"]),
    )


def rows(sessions: sessionmaker[Session]) -> dict[uuid.UUID, Transfer]:
    with sessions() as session:
        return {t.transfer_ref: t for t in session.scalars(select(Transfer))}


def poll_until(rt: Runtime, done: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the transfers did not get where expected in time"
        poll_due_transfers(rt, backoff=QUICK)
        time.sleep(0.02)


def overdue_refs(rt: Runtime, settings: Settings) -> set[str]:
    """Run a reconciliation pass well past every deadline; the refs finality_overdue names."""
    run_pass(rt.sessions, settings, now=utcnow() + timedelta(seconds=30), publish=False)
    with rt.sessions() as session:
        alerts = session.scalars(select(Alert).where(Alert.kind == "finality_overdue"))
        return {a.evidence["transfer"]["transferRef"] for a in alerts}


def created_elsewhere(
    sandbox: SandboxServer, source: dict[str, str], to: dict[str, str]
) -> uuid.UUID:
    """A transfer some other system made at the gateway: recon never saw it asked for."""
    with GatewayClient(sandbox.base_url, "ak_test_recon") as other:
        made = other.create_transfer(
            TransferRequest(
                source=address(source),
                destination=Destination.internal(address(to)),
                value_unit=ValueUnit.fiat("NGN"),
                amount_minor_units=55,
            )
        )
    assert isinstance(made, TransferAccepted)
    return made.transfer_ref


def answer(out: str) -> str:
    """The gateway's answer: what `transfer create` prints after saying the transfer back and
    its fee."""
    said, fee, rest = out.split("\n", 2)
    assert said.startswith("sending ") and fee.startswith("fee"), out
    return rest


@pytest.fixture
def run_cli(worker_env: dict[str, str]) -> Iterator[Callable[..., tuple[int, str]]]:
    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli, list(args), env=worker_env, catch_exceptions=False)
        return result.exit_code, result.output

    yield run
    logging.getLogger("upstream").setLevel(logging.NOTSET)


def test_cli_create_and_track_are_recorded_then_polled_to_terminal(
    runtime: Runtime,
    worker_settings: Settings,
    sandbox: SandboxServer,
    holdings: tuple[dict[str, str], dict[str, str]],
    run_cli: Callable[..., tuple[int, str]],
) -> None:
    source, target = holdings
    sandbox.state.outcomes.queue_next("settle")
    sandbox.state.outcomes.queue_next("hold")
    move = ["--from", arg(source), "--to", arg(target)]

    code, out = run_cli("transfer", "create", "--yes", *move, "--amount", "100")
    assert code == 0 and answer(out).startswith("accepted: transfer "), out
    settled = uuid.UUID(answer(out).split()[2])
    code, out = run_cli("transfer", "create", "--yes", *move, "--amount", "10000000000000")
    assert code == 1 and answer(out).startswith("denied: transfer "), out
    denied = uuid.UUID(answer(out).split()[2].rstrip(":"))
    code, out = run_cli("transfer", "create", "--yes", *move, "--amount", "200")
    assert code == 0, out
    held = uuid.UUID(answer(out).split()[2])

    # Recorded before polling: the denied one is visible, terminal at once; intents answered.
    stored = rows(runtime.sessions)
    assert {settled, denied, held} <= set(stored)
    assert (stored[denied].status, stored[denied].is_terminal) == ("reservation_denied", True)
    with runtime.sessions() as session:
        intents = {i.transfer_ref: i for i in session.scalars(select(TransferIntent))}
    assert {r: intents[r].outcome for r in (settled, denied, held)} == {
        settled: "reserved",
        denied: "denied",
        held: "reserved",
    }
    assert {intents[r].requested_via for r in (settled, denied, held)} == {"cli"}

    # Followed until terminal; the held one keeps being polled and is overdue.
    poll_until(runtime, lambda: rows(runtime.sessions)[settled].is_terminal)
    poll_until(runtime, lambda: rows(runtime.sessions)[held].status is not None)
    final = rows(runtime.sessions)
    assert final[settled].is_successful is True
    assert final[held].is_terminal is False and final[held].next_poll_at is not None
    assert overdue_refs(runtime, worker_settings) == {str(held)}

    # A transfer created elsewhere: tracked (origin imported), then polled to terminal. Held on
    # the rail until the test fails it: left to the sandbox's finality delay, a slow machine
    # would see it settle first.
    sandbox.state.outcomes.queue_next("hold")
    elsewhere = created_elsewhere(sandbox, source, target)
    code, out = run_cli("transfer", "track", str(elsewhere))
    assert code == 0 and f"tracking: transfer {elsewhere} (origin imported)" in out, out
    code, out = run_cli("transfer", "track", str(elsewhere))
    assert code == 0 and out.startswith("already followed"), out
    sandbox.state.finalize(str(elsewhere), "fail")
    poll_until(runtime, lambda: rows(runtime.sessions)[elsewhere].is_terminal)
    assert rows(runtime.sessions)[elsewhere].is_successful is False
    code, out = run_cli("transfer", "track", str(uuid.uuid4()))
    assert code == 1 and "no such resource" in out


@pytest.fixture
def web(worker_settings: Settings) -> Iterator[TestClient[object]]:
    app = create_app(worker_settings, enqueue=None, self_register=False)
    with TestClient(app) as client:
        yield client


def test_http_create_is_recorded_polled_and_idempotent_for_the_caller(
    runtime: Runtime,
    worker_settings: Settings,
    sandbox: SandboxServer,
    holdings: tuple[dict[str, str], dict[str, str]],
    web: TestClient[object],
) -> None:
    source, target = holdings
    sandbox.state.outcomes.queue_next("hold")

    def body(amount: int) -> dict[str, object]:
        def holding(ref: dict[str, str]) -> dict[str, str]:
            return {k: ref[k] for k in ("accountRef", "endpointRef", "holdingRef")}

        return {
            "source": holding(source),
            "destination": holding(target),
            "amountMinorUnits": amount,
            "currency": "NGN",
        }

    assert web.post("/transfers", json=body(100)).status_code == 401
    key = str(uuid.uuid4())
    first = web.post("/transfers", json=body(100), headers={**ADMIN, "Idempotency-Key": key})
    assert first.status_code == 200, first.text
    made = first.json()
    assert (made["outcome"], made["stage"], made["answeredFromStore"]) == (
        "reserved",
        "PrincipalReserved",
        False,
    )
    held = uuid.UUID(made["transferRef"])
    # The caller's retry: answered from the store, no second transfer.
    again = web.post("/transfers", json=body(100), headers={**ADMIN, "Idempotency-Key": key})
    assert again.status_code == 200 and again.json()["transferRef"] == made["transferRef"]
    assert again.json()["answeredFromStore"] is True
    other = web.post("/transfers", json=body(101), headers={**ADMIN, "Idempotency-Key": key})
    assert other.status_code == 409 and "different transfer request" in other.text
    assert len(sandbox.state.transfers) == 1

    denied = web.post("/transfers", json=body(10**13), headers=ADMIN)
    assert denied.status_code == 200
    assert (denied.json()["outcome"], denied.json()["denialReason"]) == (
        "denied",
        "InsufficientAvailableBalance",
    )
    for bad in (
        {**body(1), "amountMinorUnits": 1.5},
        {**body(1), "amountMinorUnits": 0},
        {**body(1), "amountMinorUnits": 10**79},  # more digits than the store keeps
    ):
        assert web.post("/transfers", json=bad, headers=ADMIN).status_code == 400
    same = {**body(5), "destination": body(5)["source"]}
    refused = web.post("/transfers", json=same, headers=ADMIN)
    assert refused.status_code == 422 and "same holding" in refused.text

    elsewhere = created_elsewhere(sandbox, source, target)
    tracked = web.post(f"/transfers/{elsewhere}/track", headers=ADMIN)
    assert tracked.status_code == 200 and tracked.json()["origin"] == "imported"
    assert web.post(f"/transfers/{uuid.uuid4()}/track", headers=ADMIN).status_code == 404

    quote = {"quoteBasisTransferRef": str(uuid.uuid4()), "totals": [], "lines": []}
    with_fee = {**body(300), "feeBearer": "receiver_pays", "acceptedQuote": quote}
    charged = web.post("/transfers", json=with_fee, headers=ADMIN)
    assert charged.status_code == 200, charged.text
    assert rows(runtime.sessions)[uuid.UUID(charged.json()["transferRef"])].fee_bearer == (
        "receiver_pays"
    )
    bad_bearer = web.post("/transfers", json={**body(1), "feeBearer": "everyone"}, headers=ADMIN)
    assert bad_bearer.status_code == 400 and "feeBearer" in bad_bearer.text

    stored = rows(runtime.sessions)
    assert stored[uuid.UUID(denied.json()["transferRef"])].is_terminal
    sandbox.state.finalize(str(elsewhere), "settle")
    poll_until(runtime, lambda: rows(runtime.sessions)[elsewhere].is_terminal)
    poll_until(runtime, lambda: rows(runtime.sessions)[held].status is not None)
    # The fee-bearing transfer settles at the rail's own pace: only the held one may be late.
    fee_paying = uuid.UUID(charged.json()["transferRef"])
    poll_until(runtime, lambda: rows(runtime.sessions)[fee_paying].is_terminal)
    assert rows(runtime.sessions)[held].is_terminal is False
    assert overdue_refs(runtime, worker_settings) == {str(held)}


def test_a_rerun_after_a_kill_between_answer_and_record_resends_under_the_same_key(
    runtime: Runtime,
    worker_settings: Settings,
    sandbox: SandboxServer,
    holdings: tuple[dict[str, str], dict[str, str]],
    run_cli: Callable[..., tuple[int, str]],
) -> None:
    """The gateway answered and the key was closed, then the process died before the intent
    recorded the answer. Running the same command again must not move the money twice."""
    source, target = holdings
    request = TransferRequest(
        source=address(source),
        destination=Destination.internal(address(target)),
        value_unit=ValueUnit.fiat("NGN"),
        amount_minor_units=100,
    )
    keys = StoreIdempotencyKeys(runtime.sessions)
    client = GatewayClient(
        worker_settings.provider.gateway_url,
        worker_settings.provider.gateway_api_key.reveal(),
        idempotency=keys,
    )

    def record(key: uuid.UUID) -> None:
        record_intent(
            runtime.sessions,
            key,
            request,
            via="cli",
            fingerprint=intent_fingerprint(request),
            client_key=None,
            now=utcnow(),
        )

    with client:
        # What request_transfer does, up to the moment the kill lands: no record_answer.
        first = client.create_transfer(request, before_send=record)
    assert isinstance(first, TransferAccepted)
    assert keys.find(first.idempotency_key).state == "done"  # type: ignore[union-attr]

    code, out = run_cli(
        "transfer",
        "create",
        "--yes",
        "--from",
        arg(source),
        "--to",
        arg(target),
        "--amount-minor",
        "100",
    )
    assert code == 0, out
    assert f"already sent: the gateway replayed transfer {first.transfer_ref}" in out, out
    assert f"idempotency key: {first.idempotency_key}" in out
    assert len(sandbox.state.transfers) == 1
    with runtime.sessions() as session:
        intent = session.scalars(select(TransferIntent)).one()
    assert (intent.outcome, intent.transfer_ref) == ("replayed", first.transfer_ref)
    assert first.transfer_ref in rows(runtime.sessions)

    # The answer is now recorded: the same command once more is a new, second transfer.
    code, out = run_cli(
        "transfer",
        "create",
        "--yes",
        "--from",
        arg(source),
        "--to",
        arg(target),
        "--amount-minor",
        "100",
    )
    assert code == 0 and answer(out).startswith("accepted: transfer "), out
    assert len(sandbox.state.transfers) == 2
