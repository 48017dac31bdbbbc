"""Amounts of any size and every value unit, from the sandbox's ledger to the report.

Holdings in an on-chain unit (18 decimals, credits of 10**30 base units: their sum is far past
2**63), in JPY (no decimals) and in KWD (three) are credited at the sandbox, read by the
activity poller and the balance snapshot job, reconciled, and reported by the CLI, on SQLite
and PostgreSQL. Before the amount columns were exact at any size, the poller failed on the
first such credit (64-bit columns), and on SQLite every report failed on the sum.
"""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select, text, update

from recon.cli.main import cli
from reconciliation.postings.balances import SNAPSHOT_FAILED
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Alert, BalanceSnapshot, Holding
from sandbox.endpoints import COLLECTION_CHILD, Endpoint
from sandbox.server import SandboxServer
from upstream import HoldingAddress, ValueUnit
from upstream.wire.balances import CreditRequest
from workers import Runtime
from workers.actors.activity import read_activity
from workers.actors.balances import snapshot_watched
from workers.actors.holdings import discover

ETH = ValueUnit(kind="token", asset="ETH", network="ethereum")
#: The code recon keeps for ETH, and what RECON_UNIT_EXPONENTS calls it.
ETH_CODE = "token:ETH@ethereum"
#: A unit recon is given no exponent for: shown as honest minor units.
WEI_CODE = "token:WEI@ethereum"
WEI = ValueUnit(kind="token", asset="WEI", network="ethereum")
BIG = 10**30


@pytest.fixture
def worker_env(sandbox_env: dict[str, str], db_url: str) -> dict[str, str]:
    return {**sandbox_env, "DATABASE_URL": db_url, "RECON_UNIT_EXPONENTS": f"{ETH_CODE}=18"}


@pytest.fixture
def cli_runner(worker_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, value in worker_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RECON_NOTIFICATION_GRACE_SECONDS", "1")
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def holding_in(sandbox: SandboxServer, unit_code: str) -> Endpoint:
    return sandbox.state.create_endpoint(
        COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", unit_code, emit=False
    )


def credit(rt: Runtime, sandbox: SandboxServer, ep: Endpoint, unit: ValueUnit, amount: int) -> None:
    """An inbound credit through the gateway's simulation route, waited for until posted."""
    before = sandbox.state.posted_sum(ep.holding_ref)
    target = HoldingAddress(
        account_ref=uuid.UUID(ep.account_ref),
        endpoint_ref=uuid.UUID(ep.endpoint_ref),
        holding_ref=uuid.UUID(ep.holding_ref),
    )
    rt.gateway.simulate_inbound_credit(
        CreditRequest(target=target, value_unit=unit, amount_minor_units=amount)
    )
    deadline = time.monotonic() + 20
    while sandbox.state.posted_sum(ep.holding_ref) != before + amount:
        assert time.monotonic() < deadline, "the sandbox never posted the credit"
        time.sleep(0.02)
    sandbox.state.settle_now()


def provider_credit(sandbox: SandboxServer, ep: Endpoint, amount: int) -> None:
    """A credit posted by the provider itself (recon's client refuses to read back an amount
    this long, so it cannot ask for one)."""
    answer = httpx.post(
        f"{sandbox.base_url}/_sandbox/postings/backdated",
        json={"holdingRef": ep.holding_ref, "amountMinorUnits": str(amount), "secondsBefore": 1},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    sandbox.state.settle_now()


def snapshot_then_read(rt: Runtime) -> None:
    """A snapshot, then every holding read past it (a balance is checked once its postings
    are read up to the snapshot's time)."""
    discover(rt)
    assert snapshot_watched(rt).refused == 0
    with rt.sessions() as session:
        holding_ids = session.scalars(select(Holding.id)).all()
    for holding_id in holding_ids:
        assert read_activity(rt, holding_id).caught_up


def test_every_unit_is_polled_snapshotted_reconciled_and_reported_exactly(
    runtime: Runtime, sandbox: SandboxServer, cli_runner: CliRunner
) -> None:
    """Invariant 5: every value unit the sandbox plays goes through polling, snapshots, the pass and
    reports exactly."""
    eth = holding_in(sandbox, ETH_CODE)
    wei = holding_in(sandbox, WEI_CODE)
    yen = holding_in(sandbox, "JPY")
    dinar = holding_in(sandbox, "KWD")
    credit(runtime, sandbox, eth, ETH, BIG)
    credit(runtime, sandbox, eth, ETH, BIG + 7)
    credit(runtime, sandbox, wei, WEI, 10**77)
    credit(runtime, sandbox, yen, ValueUnit.fiat("JPY"), 1500)
    credit(runtime, sandbox, dinar, ValueUnit.fiat("KWD"), 1_234_567)
    snapshot_then_read(runtime)

    invoke(cli_runner, "reconcile", "--json")
    report = json.loads(invoke(cli_runner, "report", "--format", "json"))
    totals = {t["holdingRef"]: t for t in report["totals"]}
    assert (totals[eth.holding_ref]["currency"], totals[eth.holding_ref]["exponent"]) == (
        ETH_CODE,
        18,
    )
    assert totals[eth.holding_ref]["creditsMinor"] == "2000000000000000000000000000007"
    assert totals[wei.holding_ref]["creditsMinor"] == "1" + "0" * 77
    assert totals[wei.holding_ref]["exponent"] is None
    assert (totals[yen.holding_ref]["creditsMinor"], totals[yen.holding_ref]["exponent"]) == (
        "1500",
        0,
    )
    assert totals[dinar.holding_ref]["exponent"] == 3
    drift = {d["holdingRef"]: d for d in report["balanceDrift"]}
    assert drift[eth.holding_ref]["settledMinor"] == "2000000000000000000000000000007"
    assert drift[eth.holding_ref]["postedMinor"] == "2000000000000000000000000000007"
    assert {d["driftMinor"] for d in drift.values()} == {"0"}
    assert report["summary"]["holdingsDrifting"] == 0

    text = invoke(cli_runner, "report", "--format", "text")
    assert "2,000,000,000,000.000000000000000007 token:ETH@ethereum" in text
    assert f"{10**77:,} minor units of token:WEI@ethereum" in text
    assert "1,500 JPY" in text
    assert "1,234.567 KWD" in text
    # Units are never added together: no line sums two of them.
    assert "2,000,000,000,000.000000000000001507" not in text


def test_a_drift_past_two_to_the_63_is_found_and_ordered_exactly(
    runtime: Runtime, sandbox: SandboxServer, cli_runner: CliRunner
) -> None:
    if "oldest_first" not in sandbox.state.config.variant.sort_directions:
        pytest.skip("a newest-first walk re-reads the page a back-dated posting lands on: no drift")
    eth = holding_in(sandbox, ETH_CODE)
    yen = holding_in(sandbox, "JPY")
    credit(runtime, sandbox, eth, ETH, BIG)
    credit(runtime, sandbox, yen, ValueUnit.fiat("JPY"), 9)
    snapshot_then_read(runtime)
    # Postings the reader will not see (behind its cursor): the balances move, the store not.
    control = f"{sandbox.base_url}/_sandbox/postings/backdated"
    for ep, amount in ((eth, 3 * 10**25), (yen, 5)):
        answer = httpx.post(
            control,
            json={"holdingRef": ep.holding_ref, "amountMinorUnits": str(amount)},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
    sandbox.state.settle_now()
    snapshot_then_read(runtime)
    invoke(cli_runner, "reconcile", "--json")
    report = json.loads(invoke(cli_runner, "report", "--format", "json"))
    drifting = [(d["holdingRef"], d["driftMinor"]) for d in report["balanceDrift"]]
    assert drifting[0] == (eth.holding_ref, "30000000000000000000000000")
    assert (yen.holding_ref, "5") in drifting
    alerts = json.loads(invoke(cli_runner, "alerts", "list", "--json"))
    subjects = " ".join(a["subject"] for a in alerts)
    assert "+30,000,000.000000000000000000 token:ETH@ethereum" in subjects


def refuse_snapshots_of(rt: Runtime, holding_id: int) -> list[str]:
    """Make the store refuse one holding's snapshots (a trigger); returns the statements that
    undo it."""
    with transaction(rt.sessions) as session:
        if session.get_bind().dialect.name == "sqlite":
            session.execute(
                text(
                    "CREATE TRIGGER refuse_snapshot BEFORE INSERT ON balance_snapshots "
                    f"WHEN NEW.holding_id = {holding_id} "
                    "BEGIN SELECT RAISE(ABORT, 'snapshot refused'); END"
                )
            )
            return ["DROP TRIGGER refuse_snapshot"]
        session.execute(
            text(
                "CREATE FUNCTION refuse_snapshot() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.holding_id = {holding_id} THEN RAISE EXCEPTION 'snapshot refused'; "
                "END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
            )
        )
        session.execute(
            text(
                "CREATE TRIGGER refuse_snapshot BEFORE INSERT ON balance_snapshots "
                "FOR EACH ROW EXECUTE FUNCTION refuse_snapshot()"
            )
        )
        return [
            "DROP TRIGGER refuse_snapshot ON balance_snapshots",
            "DROP FUNCTION refuse_snapshot()",
        ]


def snapshot_alerts(rt: Runtime) -> dict[str, str]:
    with rt.sessions() as session:
        return {
            a.evidence["holdingRef"]: a.state
            for a in session.scalars(select(Alert).where(Alert.kind == SNAPSHOT_FAILED))
        }


def test_the_snapshot_job_carries_on_past_a_holding_that_fails_and_alerts_for_it_alone(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    unreadable = holding_in(sandbox, WEI_CODE)  # its balance passes what recon keeps
    refused = holding_in(sandbox, "JPY")  # the store refuses its rows
    fine = holding_in(sandbox, ETH_CODE)
    provider_credit(sandbox, unreadable, 10**79)
    credit(runtime, sandbox, refused, ValueUnit.fiat("JPY"), 700)
    credit(runtime, sandbox, fine, ETH, BIG)
    discover(runtime)
    with runtime.sessions() as session:
        ids = {str(h.holding_ref): h.id for h in session.scalars(select(Holding))}
    undo = refuse_snapshots_of(runtime, ids[refused.holding_ref])
    try:
        result = snapshot_watched(runtime)
    finally:
        with transaction(runtime.sessions) as session:
            for statement in undo:
                session.execute(text(statement))
    assert (result.snapshots, result.failed, result.refused) == (1, 1, 1)
    with runtime.sessions() as session:
        rows = session.execute(select(BalanceSnapshot.holding_id, BalanceSnapshot.settled_minor))
        stored = {int(h): int(settled) for h, settled in rows}
    assert stored == {ids[fine.holding_ref]: BIG}
    assert snapshot_alerts(runtime) == {
        unreadable.holding_ref: "open",
        refused.holding_ref: "open",
    }
    # The store takes the refused holding's rows again: its alert is resolved, the other stays.
    again = snapshot_watched(runtime)
    assert (again.snapshots, again.failed, again.refused) == (2, 1, 0)
    assert snapshot_alerts(runtime) == {
        unreadable.holding_ref: "open",
        refused.holding_ref: "resolved",
    }


def test_an_activity_entry_past_78_digits_is_refused_naming_its_line(
    runtime: Runtime, sandbox: SandboxServer, cli_runner: CliRunner
) -> None:
    ep = holding_in(sandbox, WEI_CODE)
    other = holding_in(sandbox, ETH_CODE)
    provider_credit(sandbox, ep, 10**79)
    credit(runtime, sandbox, other, ETH, BIG)
    discover(runtime)
    [line] = [e["lineRef"] for e in sandbox.state.postings(ep.holding_ref)]
    with runtime.sessions() as session:
        ids = {str(h.holding_ref): h.id for h in session.scalars(select(Holding))}
    for _ in range(5):  # policy.poller_stuck_errors
        read = read_activity(runtime, ids[ep.holding_ref])
        assert read.error is not None and "80 digits" in read.error and line in read.error
        with transaction(runtime.sessions) as session:  # due again at once, for this test
            session.execute(
                update(ActivityCursor)
                .where(ActivityCursor.holding_id == ids[ep.holding_ref])
                .values(next_poll_at=None, lease_owner=None, lease_expires_at=None)
            )
    assert read_activity(runtime, ids[other.holding_ref]).caught_up
    invoke(cli_runner, "reconcile", "--json")
    alerts = json.loads(invoke(cli_runner, "alerts", "list", "--kind", "poller_stuck", "--json"))
    assert [a["evidence"]["holdingRef"] for a in alerts] == [ep.holding_ref]
    assert line in alerts[0]["evidence"]["lastError"]
