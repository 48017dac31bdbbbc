"""`recon sandbox traffic` against a running sandbox over HTTP, as a person runs it beside the
Procfile: it finds or opens the accounts, moves the money it says it moves, records its
transfers in recon's store, and its faults reach recon's receiver as the faults they name."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import load_settings, major_to_minor
from foundation.money_words import number_in_words
from migrations import runner as migrate
from recon.cli.main import cli
from recon.demo.scenario import COLLECTION_TEMPLATE
from recon.gateway_holdings import gateway_holdings
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Alert, Transfer
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from tests.integration.app.receiver_helpers import ServedApp, free_port, stored, wait_for
from upstream import GatewayClient

#: Quick provider timings, but a credit posts (and its webhook event is emitted) only after a
#: pause longer than a request takes, as at a real provider: a fault armed for the next credit
#: before this one's event was emitted would hit this one's delivery.
FAST = SandboxConfig(
    inbound_posting_delay_seconds=0.3,
    projection_lag_seconds=0.01,
    transfer_finality_delay_seconds=0.05,
    delivery_retry_schedule=(0.1, 0.1),
    retry_policy_time_scale=0.0001,
)
#: A said-back amount: figures, then the words in brackets.
SAID = re.compile(r"(crediting|sending) ([0-9,.]+) NGN \(([a-z -]+) and ([0-9]{2})/100 NGN\)")


@pytest.fixture
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(FAST) as server:
        yield server


@pytest.fixture
def env(base_env: dict[str, str], sandbox: SandboxServer) -> dict[str, str]:
    values = base_env | {
        "RECON_GATEWAY_URL": sandbox.base_url,
        "RECON_COMPANY_URL": sandbox.base_url,
    }
    migrate.upgrade(values["DATABASE_URL"])
    return values


@pytest.fixture
def store(env: dict[str, str]) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(env["DATABASE_URL"])
    yield make_session_factory(engine)
    engine.dispose()


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(cli, ["sandbox", "traffic", *args], env=env, catch_exceptions=False)


def control(sandbox: SandboxServer, path: str) -> Any:
    response = httpx.get(f"{sandbox.base_url}/_sandbox{path}", timeout=10)
    response.raise_for_status()
    return response.json()


def said(output: str, verb: str) -> list[int]:
    """The minor units of every amount the command said it would move; its words must say the
    same amount as its figures."""
    amounts = []
    for m in SAID.finditer(output):
        if m.group(1) != verb:
            continue
        minor = major_to_minor(m.group(2).replace(",", ""), "NGN")
        assert (m.group(3), int(m.group(4))) == (number_in_words(minor // 100), minor % 100)
        amounts.append(minor)
    return amounts


def written(minor: int) -> set[str]:
    """An NGN amount as a delivery body may write it: major units, or minor units."""
    return {f"{minor // 100}.{minor % 100:02d}", str(minor)}


def test_a_day_of_traffic_moves_what_it_says(
    env: dict[str, str], sandbox: SandboxServer, store: sessionmaker[Session]
) -> None:
    first = run(env, "--accounts", "2", "--credits", "3", "--transfers", "2", "--seed", "7")
    assert first.exit_code == 0, first.output
    assert "0 NGN customer account(s) found on the gateway, opening 2" in first.output
    credits, sends = said(first.output, "crediting"), said(first.output, "sending")
    assert len(credits) == 3 and len(sends) == 2
    state = control(sandbox, "/state")
    assert (state["holdings"], state["transfers"]) == (2, 2)
    # The transfers went out at the amounts said back, and were recorded in recon's store.
    assert sorted(t.amount for t in sandbox.state.transfers.values()) == sorted(sends)
    with store() as session:
        recorded = sorted(t.amount_minor for t in session.scalars(select(Transfer)))
    assert recorded == sorted(sends)
    # Over the gateway: once the transfers settle, the two accounts hold what was credited.
    with GatewayClient(sandbox.base_url, env["RECON_GATEWAY_API_KEY"]) as gateway:
        accounts = [
            h.address for h in gateway_holdings(gateway) if h.template == COLLECTION_TEMPLATE
        ]

        def held() -> int:
            return sum(
                hb.available_minor_units
                for a in accounts
                for hb in gateway.balance(
                    a.account_ref, a.endpoint_ref, a.holding_ref
                ).value.holding_balances
            )

        wait_for(lambda: held() == sum(credits), 10, "the credits, less nothing, on the accounts")
    assert "done: 3 credit(s) of " in first.output and "2 transfer(s) (0 denied)" in first.output

    again = run(env, "--accounts", "2", "--credits", "1", "--transfers", "0")
    assert again.exit_code == 0, again.output
    assert "2 NGN customer account(s) found on the gateway\n" in again.output
    assert control(sandbox, "/state")["holdings"] == 2, "a second day opens no account"


def test_faults_reach_recon_as_the_faults_they_name(
    env: dict[str, str], sandbox: SandboxServer, store: sessionmaker[Session]
) -> None:
    without_receiver = run(env, "--faults", "amount-mismatch")
    assert without_receiver.exit_code == 1
    assert "no active webhook at the sandbox takes PAYMENT_RECEIVED" in without_receiver.output
    port = free_port()
    settings = load_settings(env | {"RECON_PUBLIC_URL": f"http://127.0.0.1:{port}"})
    app = create_app(settings, enqueue=None, self_register=True)
    with ServedApp(app, port):
        assert app.state["registration"].wait(20) is not None, "recon did not register itself"
        faults = "amount-mismatch,duplicate-delivery,conflicting-delivery"
        result = run(
            env, "--accounts", "1", "--credits", "1", "--transfers", "0", "--faults", faults
        )
        assert result.exit_code == 0, result.output
        assert "faults: amount-mismatch, duplicate-delivery, conflicting-delivery" in result.output
        assert "expect an amount_mismatch alert" in result.output

        def played_out() -> list[Any] | None:
            rows = [r for r in stored(store) if r.event_type == "PAYMENT_RECEIVED"]
            return rows if len(rows) >= 5 else None

        rows = wait_for(played_out, 20, "four credits' deliveries (one twice over) in recon")

    fired = {f["kind"]: f["fired"] for f in control(sandbox, "/faults")["deliveries"]}
    assert fired == {"altered_amount": 1, "duplicate": 1, "same_id_other_body": 1}
    # The altered amount is the fault's own credit's, one minor unit up; every other credit's
    # delivery carries its true amount.
    (altered,) = said(result.output.split("fault amount-mismatch: ")[1], "crediting")[:1]
    true_amounts = {
        e["id"]: major_to_minor(e["data"]["amount"], "NGN")
        for e in control(sandbox, "/events")["events"]
        if e["event"] == "PAYMENT_RECEIVED"
    }
    for attempt in control(sandbox, "/deliveries?eventType=PAYMENT_RECEIVED")["deliveries"]:
        if attempt["label"] == "other_body":
            continue  # the conflicting fault's second body: another narration, same amount
        amount = true_amounts[attempt["eventId"]]
        sent = amount + 1 if amount == altered else amount
        assert written(sent) & set(re.findall(r"[0-9.]+", attempt["body"])), (amount, attempt)
    # One plain credit, the altered one, the duplicate stored once, the conflict twice.
    assert sorted(r.state for r in rows) == ["pending"] * 4 + ["quarantined"]
    with store() as session:
        assert [a.kind for a in session.scalars(select(Alert))] == ["delivery_body_conflict"]


def test_traffic_refuses_what_it_cannot_do(env: dict[str, str], base_env: dict[str, str]) -> None:
    unknown = run(env, "--faults", "amount-mismatch,typo")
    assert unknown.exit_code == 2
    assert "unknown fault typo; the faults are dropped-webhook, amount-mismatch" in unknown.output
    server_option = CliRunner().invoke(cli, ["sandbox", "--port", "9", "traffic"], env=env)
    assert server_option.exit_code == 2 and "--port configure(s) the sandbox server" in (
        server_option.output
    )
    with SandboxServer(SandboxConfig(environment_kind="Live")) as live:
        refused = run(
            base_env | {"RECON_GATEWAY_URL": live.base_url} | {"DATABASE_URL": env["DATABASE_URL"]}
        )
        assert refused.exit_code == 1 and "not a sandbox" in refused.output
        assert live.state.holdings == {}, "nothing was opened on a live environment"
