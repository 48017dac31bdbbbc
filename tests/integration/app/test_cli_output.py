"""Human output stays human: a command's answer on stdout, logs only on stderr, and few of them.

Through a subprocess with pipes, as a person piping into `less` or a script reading stdout
sees it; through CliRunner at a narrow and a wide terminal. Without `--verbose` a one-shot
command logs only warnings and errors; with it, logs appear, on stderr and never on stdout.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from click.testing import CliRunner

from migrations.runner import alembic_config
from recon.cli.main import cli
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer

#: What a structured log line looks like in either renderer (JSON, or the console's "[info ]").
LOG_LINE = re.compile(r'("event":|"level":|\[(debug|info|warning|error)\s*\] )')


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(SandboxConfig(run_background=False)) as server:
        yield server


@pytest.fixture
def env(recon_env: dict[str, str], sandbox: SandboxServer) -> dict[str, str]:
    return {
        **recon_env,
        "RECON_GATEWAY_URL": sandbox.base_url,
        "RECON_COMPANY_URL": sandbox.base_url,
        "RECON_PUBLIC_URL": "https://recon.example.test",
        "PATH": os.environ["PATH"],
    }


def piped(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if LOG_LINE.search(line)]


@pytest.mark.parametrize(
    "command",
    [["webhooks", "register"], ["webhooks", "list"], ["reconcile", "--dry-run"], ["report"]],
)
def test_commands_print_their_answer_and_no_log_lines(
    env: dict[str, str], command: list[str]
) -> None:
    result = piped(env, *command)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert log_lines(result.stdout) == []
    assert log_lines(result.stderr) == [], result.stderr


def test_verbose_logs_go_to_stderr_only(env: dict[str, str]) -> None:
    result = piped(env, "--verbose", "reconcile", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert any("reconcile.pass" in line for line in log_lines(result.stderr)), result.stderr
    assert log_lines(result.stdout) == []
    assert result.stdout.startswith("would match:")


def test_check_with_the_provider_down_gives_its_verdict_first(env: dict[str, str]) -> None:
    down = {
        **env,
        "RECON_GATEWAY_URL": "http://127.0.0.1:9",
        "RECON_COMPANY_URL": "http://127.0.0.1:9",
    }
    result = piped(down, "check")
    assert result.returncode == 3
    assert result.stdout.splitlines()[0] == (
        "verdict: could not check the company API and the gateway: unreachable (details below)"
    )
    assert "could not be reached" in result.stdout
    assert result.stderr == ""
    verbose = piped(down, "--verbose", "check")
    assert verbose.returncode == 3
    assert sum("upstream.retry" in line for line in log_lines(verbose.stderr)) >= 2
    assert log_lines(verbose.stdout) == []


def test_check_with_good_credentials_says_so_first(env: dict[str, str]) -> None:
    result = piped(env, "check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "verdict: credentials good"
    assert result.stderr == ""


def _head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


def test_db_upgrade_names_the_store_and_the_revision(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "fresh" / "recon.db"
    env = {**base_env, "DATABASE_URL": f"sqlite:///{store}", "PATH": os.environ["PATH"]}
    first = piped(env, "db", "upgrade")
    assert first.returncode == 0, first.stderr
    head = _head_revision()
    assert first.stdout == (
        f"database at sqlite:///{store} upgraded to head: revision base -> {head}\n"
    )
    assert first.stderr == ""  # alembic's INFO lines are logs, kept for --verbose
    again = piped(env, "db", "upgrade")
    assert again.stdout == f"database at sqlite:///{store} is already at head (revision {head})\n"


@pytest.mark.postgres
def test_db_upgrade_masks_the_password(
    base_env: dict[str, str], postgres_template_url: str
) -> None:
    # The test server trusts local connections, so any password gets in, and must not be shown.
    with_password = postgres_template_url.replace("://postgres@", "://postgres:hunter2-pw@", 1)
    assert "hunter2-pw" in with_password, "expected a postgres@ URL from the test fixture"
    env = {**base_env, "DATABASE_URL": with_password, "PATH": os.environ["PATH"]}
    result = piped(env, "db", "upgrade")
    assert result.returncode == 0, result.stderr
    assert "hunter2-pw" not in result.stdout + result.stderr
    assert result.stdout.startswith("database at postgresql+psycopg://postgres:***@")
    assert result.stdout.rstrip().endswith(f"is already at head (revision {_head_revision()})")


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """CliRunner swaps stderr per run; put the real handlers back for the tests after this one."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    upstream_level = logging.getLogger("upstream").level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("upstream").setLevel(upstream_level)


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("columns", ["40", "200"])
@pytest.mark.parametrize("command", [["webhooks", "list"], ["reconcile", "--dry-run"]])
def test_output_is_free_of_logs_at_any_width(
    env: dict[str, str], columns: str, command: list[str]
) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, command, env={**env, "COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert result.stdout.strip()
    assert log_lines(result.stdout) == []
    assert log_lines(result.stderr) == []
