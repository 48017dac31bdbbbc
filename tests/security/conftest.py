"""Attacks run against real processes: `recon web` and `recon` commands as subprocesses.

Each test in this folder plays an attacker (or an operator making a mistake an attacker would
love) against a process started the way the Procfile starts it, over real sockets, and asserts
the refusal. `web_process` starts `recon web` on a free port and stops it at the end of the
test; `run_recon` runs a one-shot command. Both take a complete environment: nothing of the
shell's RECON_* variables or REDIS_URL leaks in.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN_TOKEN, SECRET, free_port, wait_for

# The worker tests' sandbox, private Redis and PostgreSQL store, shared rather than copied:
# pytest finds a fixture by its name in this module, so importing it is how it is offered here.
from tests.integration.workers.conftest import (  # noqa: F401 - fixtures, requested by name
    postgres_db_url,
    private_redis,
    probe,
    probed,
    sandbox,
    sandbox_config,
    sandbox_env,
)

#: Seconds a web process may take to answer /health under a loaded machine.
START_SECONDS = 60


@dataclass
class WebProcess:
    """A running `recon web`: its base URL, its log file and its process."""

    base: str
    log: Path
    popen: subprocess.Popen[bytes]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        return self.popen.returncode


def clean_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The shell's environment without recon's variables, then `env` on top."""
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith("RECON_") and k != "REDIS_URL"
    }
    inherited.pop("DATABASE_URL", None)
    return {**inherited, **env}


@pytest.fixture
def security_env(base_env: dict[str, str], sqlite_template: Path, tmp_path: Path) -> dict[str, str]:
    """A valid web environment on a migrated SQLite store in its own private state folder,
    with one configured webhook secret, and JSON logs."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    shutil.copyfile(sqlite_template, state / "recon.db")
    return {
        **base_env,
        "DATABASE_URL": f"sqlite:///{state / 'recon.db'}",
        "RECON_WEBHOOK_SECRETS": SECRET,
        "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
        "RECON_LOG_FORMAT": "json",
        "RECON_LOG_LEVEL": "info",
    }


def start_web(
    env: Mapping[str, str], log: Path, *args: str, expect_exit: bool = False
) -> WebProcess:
    """`recon web --no-register` on a free port; waits for /health (or for it to exit)."""
    port = free_port()
    with log.open("ab") as out:
        popen = subprocess.Popen(
            [sys.executable, "-m", "recon", "web", "--no-register", "--port", str(port), *args],
            env=clean_environment(env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    web = WebProcess(f"http://127.0.0.1:{port}", log, popen)
    if expect_exit:
        popen.wait(START_SECONDS)
        return web
    wait_for(
        lambda: popen.poll() is not None or _answers(web.base),
        START_SECONDS,
        "recon web to answer /health",
    )
    assert popen.poll() is None, f"recon web exited:\n{web.log_text()[-3000:]}"
    return web


@pytest.fixture
def web_process(tmp_path: Path) -> Iterator[Callable[..., WebProcess]]:
    """Start `recon web` processes for a test; every one is stopped at its end."""
    started: list[WebProcess] = []

    def start(env: Mapping[str, str], *args: str, expect_exit: bool = False) -> WebProcess:
        web = start_web(env, tmp_path / f"web-{len(started)}.log", *args, expect_exit=expect_exit)
        started.append(web)
        return web

    yield start
    for web in started:
        web.stop()


def run_recon(
    env: Mapping[str, str], *args: str, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """One `recon` command as a subprocess (in `cwd` if given), its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "recon", *args],
        env=clean_environment(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
