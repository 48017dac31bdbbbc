"""`recon check`, `transfer`, `endpoints` and `credit` against the sandbox, as an operator runs them."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from migrations import runner as migrate
from recon.cli.main import cli
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Transfer
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from tests.integration.upstream.conftest import (
    Control,
    available,
    funded,
    new_endpoint,
    wait_for_available,
)
from upstream import GatewayClient, HoldingAddress


@pytest.fixture
def env(base_env: dict[str, str], sandbox: SandboxServer) -> Iterator[dict[str, str]]:
    values = base_env | {
        "RECON_GATEWAY_URL": sandbox.base_url,
        "RECON_COMPANY_URL": sandbox.base_url,
        "RECON_LOG_FORMAT": "console",
    }
    migrate.upgrade(values["DATABASE_URL"])
    yield values
    logging.getLogger("upstream").setLevel(logging.NOTSET)


def run(env: dict[str, str], *args: str, answer: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, input=answer, catch_exceptions=False)


def _arg(h: HoldingAddress) -> str:
    return f"{h.account_ref}:{h.endpoint_ref}:{h.holding_ref}"


def test_check_with_good_credentials(env: dict[str, str]) -> None:
    result = run(env, "check")
    assert result.exit_code == 0, result.output
    assert "credentials: good" in result.output
    assert "environment: sandbox (DemoSandbox" in result.output
    assert "unavailable parts: none" in result.output
    assert "verdict: credentials good" in result.output


@pytest.mark.parametrize(
    "variable,value,who",
    [
        ("RECON_GATEWAY_API_KEY", "ak_test_typo", "gateway"),
        ("RECON_COMPANY_API_KEY", "ck_test_typo", "company API"),
        ("RECON_COMPANY_APP_ID", "6f1c2a34-0000-4000-8000-000000000001", "company API"),
    ],
)
def test_check_with_bad_credentials(
    env: dict[str, str], variable: str, value: str, who: str
) -> None:
    result = run(env | {variable: value}, "check")
    assert result.exit_code == 1
    assert "credentials: BAD" in result.output
    assert "stray spaces or characters" in result.output
    assert f"verdict: credentials BAD for the {who}" in result.output
    assert value not in result.output


def test_check_reports_live_environments_and_unavailable_parts(base_env: dict[str, str]) -> None:
    config = SandboxConfig(environment_kind="Live", environment_unavailable_parts=("Events",))
    with SandboxServer(config) as live:
        env = base_env | {"RECON_GATEWAY_URL": live.base_url, "RECON_COMPANY_URL": live.base_url}
        result = run(env, "check")
    assert result.exit_code == 0, result.output
    assert "environment: live (Live" in result.output
    assert "unavailable parts: Events" in result.output


def test_check_when_the_provider_is_unreachable(base_env: dict[str, str]) -> None:
    env = base_env | {
        "RECON_GATEWAY_URL": "http://127.0.0.1:9",
        "RECON_COMPANY_URL": "http://127.0.0.1:9",
    }
    result = run(env, "check")
    assert result.exit_code == 3
    assert "could not be reached" in result.output


def test_transfer_quote_create_and_status(
    env: dict[str, str], gateway: GatewayClient, control: Control
) -> None:
    source = funded(gateway, control, 50_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    args = ["--from", _arg(source), "--to", _arg(dest), "--amount", "120"]
    quoted = run(env, "transfer", "quote", *args)
    assert quoted.exit_code == 0 and "fees: none (no_configured_fee)" in quoted.output
    assert "amount: 120.00 NGN (minor units 12000)" in quoted.output
    created = run(env, "transfer", "create", "--yes", *args)
    assert created.exit_code == 0, created.output
    said, fee, accepted = created.output.splitlines()[:3]
    assert fee.startswith("fee")
    assert said == (
        f"sending 120.00 NGN (one hundred twenty and 00/100 NGN) from holding "
        f"{source.holding_ref} to holding {dest.holding_ref}"
    )
    assert accepted.startswith("accepted: transfer ") and " of 120.00 NGN " in accepted
    ref = accepted.split()[2]
    assert available(gateway, source) == 50_000 - 12_000, "120 major units moved, not 120 minor"
    status = run(env, "transfer", "status", ref)
    assert status.exit_code == 0 and "awaiting_finality" in status.output
    denied = run(env, "transfer", "create", "--yes", *args[:4], "--amount-minor", "10000000")
    assert denied.exit_code == 1 and "denied: " in denied.output
    assert "of 100,000.00 NGN: InsufficientAvailableBalance; nothing moved" in denied.output


def test_transfer_create_asks_before_it_sends_unless_told_yes(
    env: dict[str, str], gateway: GatewayClient, control: Control
) -> None:
    """The amount is read back and then asked about: "n", or no answer at all (a script that
    forgot --yes), sends nothing; "y" sends it."""
    source = funded(gateway, control, 50_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    args = ["transfer", "create", "--from", _arg(source), "--to", _arg(dest), "--amount", "120"]
    for answer in ("n\n", ""):
        kept = run(env, *args, answer=answer)
        assert kept.exit_code == 1, kept.output
        assert (
            "one hundred twenty and 00/100 NGN" in kept.output and "send it? [y/N]" in kept.output
        )
        assert "not sent: nothing moved" in kept.output
        assert available(gateway, source) == 50_000
    sent = run(env, *args, answer="y\n")
    assert sent.exit_code == 0, sent.output
    assert "accepted: transfer " in sent.output
    assert available(gateway, source) == 50_000 - 12_000


@pytest.mark.parametrize(
    ("amount", "refusal"),
    [
        (["--amount", "5.001"], "5.001 has 3 decimal places; NGN has 2 (its exponent)"),
        (["--amount", "1,500"], "no sign or separators"),
        (["--amount", "-5"], "no sign or separators"),
        (["--amount", "0.00"], "more than zero"),
        (["--amount", "5", "--amount-minor", "500"], "give the amount once"),
        ([], "give the amount once"),
        (["--amount", "5.5", "--currency", "JPY"], "JPY has 0 (its exponent)"),
        (["--amount", "5", "--currency", "XYZ"], "knows no exponent for XYZ"),
    ],
)
def test_amounts_are_major_units_and_refused_when_they_do_not_fit(
    env: dict[str, str], gateway: GatewayClient, amount: list[str], refusal: str
) -> None:
    holding = _arg(new_endpoint(gateway))
    for command in (["transfer", "quote", "--from", holding], ["credit", "simulate"]):
        result = run(env, *command, "--to", holding, *amount)
        assert result.exit_code == 2, result.output
        assert refusal in result.output
        assert "crediting" not in result.output and "quoting" not in result.output


def test_transfer_errors_are_plain(env: dict[str, str]) -> None:
    result = run(env, "transfer", "status", str(uuid.uuid4()))
    assert result.exit_code == 1 and "no such resource" in result.output
    result = run(env, "transfer", "quote", "--from", "x", "--to", "y", "--amount", "1")
    assert result.exit_code == 2 and "three UUIDs" in result.output
    assert "recon endpoints show ENDPOINT_REF" in result.output


def test_endpoint_commands(env: dict[str, str], gateway: GatewayClient) -> None:
    holding = new_endpoint(gateway)
    ref = str(holding.endpoint_ref)
    listed = run(env, "endpoints", "list")
    assert listed.exit_code == 0 and ref in listed.output and "1 endpoint(s)" in listed.output
    narrow = run(env, "endpoints", "list", "--width", "48")
    assert narrow.exit_code == 0 and ref[:40] in narrow.output
    assert max(len(line) for line in narrow.output.splitlines()) <= 48
    shown = run(env, "endpoints", "show", ref)
    assert shown.exit_code == 0 and "locator: nigerian_bank_account" in shown.output
    # The list says the account number people type (`transfer --from`), as `show` does.
    (number,) = re.findall(r"\(account number (\d+)\)", shown.output)
    line = next(row for row in listed.output.splitlines() if row.startswith(ref))
    assert line.endswith(f"account number {number}"), line
    ready = run(env, "endpoints", "readiness", ref)
    assert ready.exit_code == 0 and "receive_funds" in ready.output
    suspended = run(env, "endpoints", "suspend", ref, "--reason", "compliance_hold")
    assert suspended.exit_code == 0, suspended.output
    assert "active -> suspended" in suspended.output
    resumed = run(env, "endpoints", "resume", ref)
    assert resumed.exit_code == 0 and "suspended -> active" in resumed.output


def test_credit_simulate_in_the_sandbox(
    env: dict[str, str], gateway: GatewayClient, control: Control
) -> None:
    holding = new_endpoint(gateway)
    result = run(env, "credit", "simulate", "--to", _arg(holding), "--amount", "75")
    assert result.exit_code == 0, result.output
    said, accepted = result.output.splitlines()[:2]
    assert said == (
        f"crediting 75.00 NGN (seventy-five and 00/100 NGN) to holding {holding.holding_ref}"
    )
    assert " of 75.00 NGN EvidencePublished" in accepted
    control.settle_now()
    wait_for_available(gateway, holding, 7_500)


def test_credit_simulate_and_transfer_take_an_account_number(
    env: dict[str, str], gateway: GatewayClient, control: Control
) -> None:
    holding = new_endpoint(gateway)
    shown = run(env, "endpoints", "show", str(holding.endpoint_ref))
    assert f"address: {_arg(holding)}" in shown.output
    (number,) = re.findall(r"\(account number ([0-9]+)\)", shown.output)
    result = run(env, "credit", "simulate", "--to", number, "--amount-minor", "1250050")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "crediting 12,500.50 NGN (twelve thousand five hundred and 50/100 NGN) to account "
        f"{number} (holding {holding.holding_ref})"
    )
    control.settle_now()
    wait_for_available(gateway, holding, 1_250_050)

    dest = new_endpoint(gateway, "customer_balance_internal")
    moved = run(
        env, "transfer", "create", "--yes", "--from", number, "--to", _arg(dest), "--amount", "0.5"
    )
    assert moved.exit_code == 0, moved.output
    assert moved.output.startswith(f"sending 0.50 NGN (zero and 50/100 NGN) from account {number}")
    wait_for_available(gateway, holding, 1_250_000)

    unknown = run(env, "credit", "simulate", "--to", "9999999999", "--amount", "1")
    assert unknown.exit_code == 2
    assert "no holding on the gateway has account number 9999999999" in unknown.output


def test_credit_simulate_is_refused_against_a_live_environment(base_env: dict[str, str]) -> None:
    with SandboxServer(SandboxConfig(environment_kind="Live")) as live:
        env = base_env | {"RECON_GATEWAY_URL": live.base_url}
        migrate.upgrade(env["DATABASE_URL"])
        target = f"{uuid.uuid4()}:{uuid.uuid4()}:{uuid.uuid4()}"
        result = run(env, "credit", "simulate", "--to", target, "--amount", "100")
        assert result.exit_code == 1
        assert "not a sandbox" in result.output
        assert live.state.simulations == {}


def test_transfer_quote_and_create_with_a_fee_bearer_and_an_accepted_quote(
    env: dict[str, str], gateway: GatewayClient, control: Control
) -> None:
    r = control.http.post("/fees", json={"flatMinorUnits": 2500, "bearer": "sender_pays"})
    assert r.status_code < 300, r.text
    source = funded(gateway, control, 50_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    args = ["--from", _arg(source), "--to", _arg(dest), "--amount", "120.00"]

    quoted = run(env, "transfer", "quote", *args, "--fee-bearer", "receiver_pays")
    assert quoted.exit_code == 0, quoted.output
    assert "fee: 25.00 NGN (application_fee, receiver_pays)" in quoted.output

    created = run(
        env, "transfer", "create", "--yes", *args, "--fee-bearer", "split", "--accept-quote"
    )
    assert created.exit_code == 0, created.output
    assert "fee: 25.00 NGN (application_fee, split), as quoted and accepted" in created.output
    engine = make_engine(env["DATABASE_URL"])
    try:
        with make_session_factory(engine)() as s:
            row = s.scalars(select(Transfer)).one()
    finally:
        engine.dispose()
    assert (row.fee_bearer, row.fee_quoted_minor) == ("split", 2500)

    refused = run(env, "transfer", "quote", *args, "--fee-bearer", "everyone")
    assert refused.exit_code == 2 and "everyone" in refused.output
