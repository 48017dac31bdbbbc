"""`recon rebuild` and `recon audit` from the command line: exit status, digests, refusals.

The rebuild's own behaviour is tested in test_rebuild.py; here, what an operator sees.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recon.cli.main import cli
from reconciliation.store.models import Match
from tests.integration.audit.small_world import POLICY, build_world


@pytest.fixture
def runner(base_env: dict[str, str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, text in {**base_env, "DATABASE_URL": db_url}.items():
        monkeypatch.setenv(name, text)
    for name, value in (
        ("RECON_NOTIFICATION_GRACE_SECONDS", POLICY.notification_grace_seconds),
        ("RECON_FINALITY_DEADLINE_SECONDS", POLICY.finality_deadline_seconds),
        ("RECON_PROJECTION_GRACE_SECONDS", POLICY.projection_grace_seconds),
        ("RECON_MATCH_WINDOW_SECONDS", POLICY.match_window_seconds),
    ):
        monkeypatch.setenv(name, str(value))
    return CliRunner()


def test_rebuild_dry_run_then_swap_from_the_command_line(
    runner: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    build_world(session_factory)
    same = runner.invoke(cli, ["rebuild", "--dry-run"], catch_exceptions=False)
    assert same.exit_code == 0, same.output
    # The verdict first; each table's digest and each phase's time only under --verbose.
    assert same.output.splitlines()[0] == "the rebuilt state equals the live one"
    assert not any(line.startswith("  ") for line in same.output.splitlines()), same.output
    took = next(line for line in same.output.splitlines() if line.startswith("took "))
    assert re.fullmatch(r"took \d+\.\d\ds", took), took
    loud = runner.invoke(cli, ["--verbose", "rebuild", "--dry-run"], catch_exceptions=False)
    assert "  matches " in loud.output, loud.output
    live = next(line for line in same.output.splitlines() if line.startswith("live derived state:"))
    rebuilt = next(
        line for line in same.output.splitlines() if line.startswith("rebuilt derived state:")
    )
    assert live.split(": ")[1] == rebuilt.split(": ")[1]

    with session_factory.begin() as s:
        match = s.scalars(select(Match).where(Match.rule == "receipt_ref")).first()
        assert match is not None
        s.delete(match)
    differs = runner.invoke(cli, ["rebuild", "--dry-run", "--json"], catch_exceptions=False)
    assert differs.exit_code == 1
    found = json.loads(differs.stdout)
    assert [d["table"] for d in found["comparison"]["differences"]] == ["matches"]
    assert found["swapped"] is None

    swapped = runner.invoke(cli, ["rebuild", "--swap", "--json"], catch_exceptions=False)
    assert swapped.exit_code == 0, swapped.output
    result = json.loads(swapped.stdout)
    assert result["afterSwap"]["digest"] == result["comparison"]["rebuilt"]["digest"]


def test_contradictory_or_bad_options_are_refused(runner: CliRunner) -> None:
    both = runner.invoke(cli, ["rebuild", "--dry-run", "--swap"])
    assert both.exit_code == 2 and "contradict" in both.output
    since = runner.invoke(cli, ["audit", "--since", "2026-11-01T00:00:00"])
    assert since.exit_code == 2 and "no time zone" in since.output
    nobody = runner.invoke(cli, ["audit", "--holding", "nobody"])
    assert nobody.exit_code == 2 and "--holding: no holding matches 'nobody'" in nobody.output


def test_rebuild_prints_its_result_and_nothing_of_its_scratch_pass(
    runner: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    """The scratch pass opens alerts (the world has drift to find), but they are the scratch's:
    the terminal shows the rebuild's result only, not `alert.opened` warnings."""
    build_world(session_factory)
    ran = runner.invoke(cli, ["rebuild", "--dry-run"], catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    assert ran.stderr == ""
    assert "not yet judged by a pass (left out of both states): nothing" in ran.stdout
    found = runner.invoke(cli, ["rebuild", "--dry-run", "--json"], catch_exceptions=False)
    rebuilt = json.loads(found.stdout)["comparison"]["rebuilt"]["tables"]["open_alerts"]
    assert not str(rebuilt).startswith("0:")  # the scratch did open alerts
