"""The demo outside its happy path: a `.env` in the folder, and SIGTERM instead of Ctrl-C.

Real runs, as a new user makes them: the README has them create a `.env` before they try the
Procfile demo (honcho reads it), and `make console` is often stopped by a process manager or a
terminal closing (SIGTERM to the demo alone), not by Ctrl-C.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_demo import REPO, _assert_demo_passed, _demo_env, fresh_postgres

__all__ = ["fresh_postgres"]  # the fixture, imported for the tests below

#: How long the demo's processes may take to come up on a busy machine.
START_TIMEOUT_SECONDS = 180


def _settings(env_file: Path) -> dict[str, str]:
    values = {}
    for line in env_file.read_text(encoding="utf-8").splitlines():
        name, equals, value = line.partition("=")
        if equals and not line.startswith("#"):
            values[name] = value.strip("'")
    return values


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=2)
    except httpx.TransportError:
        return False
    return True


@pytest.mark.slow
def test_sigterm_stops_the_served_demo_and_its_children(tmp_path: Path) -> None:
    env = _demo_env(tmp_path)
    env_file = tmp_path / "state" / "demo" / "env"
    demo = subprocess.Popen(
        [sys.executable, "-m", "recon", "demo", "--serve", "--report", str(tmp_path / "r.html")],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        web = sandbox = ""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline and demo.poll() is None:
            if env_file.is_file():
                settings = _settings(env_file)
                web, sandbox = settings["RECON_PUBLIC_URL"], settings["RECON_GATEWAY_URL"]
                if _answers(f"{web}/ready") and _answers(f"{sandbox}/_sandbox/state"):
                    break
            time.sleep(0.5)
        assert web and _answers(f"{web}/ready"), "the demo's web process never came up"

        demo.send_signal(signal.SIGTERM)  # to the demo alone, as a process manager does
        assert demo.wait(timeout=60) != 0
        assert demo.stderr is not None
        assert "stopped (SIGTERM)" in demo.stderr.read()
        assert not _answers(f"{web}/ready"), "recon web outlived the demo"
        assert not _answers(f"{sandbox}/_sandbox/state"), "the sandbox outlived the demo"
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_procfile_demo_is_not_led_astray_by_a_dotenv(
    tmp_path: Path, fresh_postgres: str, flushed_redis_url: str
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    # What a laptop .env holds: another store, the default port, the default schedules.
    (folder / ".env").write_text(
        "DATABASE_URL=sqlite:///elsewhere.db\nPORT=8000\nRECON_POLL_ACTIVITY_SECONDS=15\n"
        "# a comment\n",
        encoding="utf-8",
    )
    report = tmp_path / "report.html"
    env = _demo_env(tmp_path, DATABASE_URL=fresh_postgres, REDIS_URL=flushed_redis_url)
    procfile = str(REPO / "Procfile")
    result = subprocess.run(
        [sys.executable, "-m", "recon", "demo", "--report", str(report), "--procfile", procfile],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    _assert_demo_passed(result, report)
    assert (
        "Procfile: ./.env not read (it would override DATABASE_URL, PORT, "
        "RECON_POLL_ACTIVITY_SECONDS)" in result.stderr
    )
    assert not (folder / "elsewhere.db").exists()
