"""`recon webhooks ...` and `recon deliveries ...` as an operator runs them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from recon.cli.main import cli
from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.store.types import utcnow
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(SandboxConfig(run_background=False)) as server:
        yield server


@pytest.fixture
def run(
    monkeypatch: pytest.MonkeyPatch, recon_env: dict[str, str], sandbox: SandboxServer
) -> Iterator[object]:
    """Invoke `recon` with the test's environment (logging left alone)."""
    sandbox.state.reset()
    monkeypatch.setattr("foundation.logs.configure_logging", lambda *a, **k: None)
    for name, value in {
        **recon_env,
        "RECON_COMPANY_URL": sandbox.base_url,
        "RECON_PUBLIC_URL": "https://recon.example.test",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("REDIS_URL", raising=False)

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    yield invoke


def test_register_list_rotate(run, sandbox: SandboxServer) -> None:  # type: ignore[no-untyped-def]
    first = run("webhooks", "register")
    assert first.exit_code == 0, first.output
    assert last_line(first).startswith("registered webhook wh_")
    again = run("webhooks", "register")
    assert last_line(again).startswith("already registered: webhook wh_")
    [webhook_id] = list(sandbox.state.webhooks)
    listed = run("webhooks", "list")
    assert listed.exit_code == 0, listed.output
    line = next(row for row in listed.output.splitlines() if row.startswith(webhook_id))
    assert line.split()[1:7] == ["ACTIVE", "0", "0", "0", "-", "1"]
    narrow = run("webhooks", "list", "--width", "60")
    assert narrow.exit_code == 0, narrow.output
    table = [row for row in narrow.stdout.splitlines() if row.startswith(("webhook ", "wh_"))]
    assert len(table) == 2 and max(len(row) for row in table) == 60, narrow.stdout
    rotated = run("webhooks", "rotate")
    assert rotated.exit_code == 0, rotated.output
    assert "the old secrets stay accepted for 24 h" in last_line(rotated)
    assert len(sandbox.state.webhooks) == 2
    after = run("webhooks", "list").output
    assert "retired" in next(row for row in after.splitlines() if row.startswith(webhook_id))


def test_register_with_the_provider_down_is_one_line(
    run,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("RECON_COMPANY_URL", "http://127.0.0.1:1")
    result = run("webhooks", "register")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("recon: the company API refused or failed:")


def test_deliveries_list_show_replay(run, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as connection:
        results = record_deliveries(
            connection,
            [
                InboundDelivery(
                    delivery_id=f"evt_{n}",
                    body=b'{"event":"PAYMENT_RECEIVED","n":%d}' % n,
                    headers={"webhook-id": f"evt_{n}"},
                    scheme="standard",
                    event_type="PAYMENT_RECEIVED",
                    received_at=utcnow(),
                    quarantine_reason="broken" if n == 2 else None,
                )
                for n in range(3)
            ],
        )
    listed = run("deliveries", "list", "--limit", "2")
    assert listed.exit_code == 0, listed.output
    table = [
        line
        for line in listed.stdout.splitlines()
        if line.split()[:1] != [] and line.split()[0].isdigit()
    ]
    assert [line.split()[1] for line in table] == ["evt_2", "evt_1"]
    # Laid out for a window of 50 columns when asked: no line longer, each cut one marked.
    narrow = run("deliveries", "list", "--limit", "2", "--width", "50")
    assert narrow.exit_code == 0, narrow.output
    assert max(len(line) for line in narrow.stdout.splitlines()) == 50
    assert any(line.endswith("…") for line in narrow.stdout.splitlines())
    assert "next page: recon deliveries list --cursor" in listed.output
    as_json = json.loads(last_line(run("deliveries", "list", "--state", "quarantined", "--json")))
    assert [item["deliveryId"] for item in as_json["items"]] == ["evt_2"]
    quarantined = results[2].row_id
    shown = run("deliveries", "show", str(quarantined))
    assert '{"event":"PAYMENT_RECEIVED","n":2}' in shown.output
    assert "error: broken" in shown.output
    replayed = run("deliveries", "replay", str(quarantined))
    assert replayed.exit_code == 0, replayed.output
    assert "is pending again" in replayed.output
    assert (
        json.loads(run("deliveries", "list", "--state", "quarantined", "--json").output)["items"]
        == []
    )
    missing = run("deliveries", "replay", "9999")
    assert missing.exit_code == 2
    assert "no delivery with row id 9999" in missing.stderr
    bad = run("deliveries", "list", "--cursor", "abc")
    assert bad.exit_code == 2
    assert "cursor 'abc' is not valid" in bad.stderr


def last_line(result: Result) -> str:
    """What the command printed last (log lines may come before it)."""
    return result.stdout.strip().splitlines()[-1]
