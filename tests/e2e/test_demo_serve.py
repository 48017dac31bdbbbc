"""`recon demo --serve` (`make console`): the scenario, then the console stays open until Ctrl-C.

A real run: the demo's processes must still answer after the verdict, the console must be served
by recon's own web process, and an interrupt must stop everything and end the command.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_demo import REPO, _demo_env

#: Longest the scenario may take to settle before the console line must appear.
SETTLE_TIMEOUT_SECONDS = 240


@pytest.mark.slow
def test_served_demo_keeps_the_console_open_until_interrupted(tmp_path: Path) -> None:
    env = _demo_env(tmp_path)
    # Ctrl-C is what the test plays. A suite started in the background (`cmd &` in a script)
    # runs with SIGINT ignored, which a child inherits and Python keeps; a handler, unlike an
    # ignored signal, is reset to the default in the child, so one is set around the start.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen(
        [sys.executable, "-m", "recon", "demo", "--serve", "--report", str(tmp_path / "r.html")],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    signal.signal(signal.SIGINT, previous)
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        console_url = None
        deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
        while console_url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(r"operator console: (\S+)", line)
            console_url = found.group(1) if found else None
        assert console_url, "".join(seen[-40:])
        assert any("recon found exactly the injected faults" in s for s in seen), "".join(seen)

        # Still up after the verdict: the sign-in page is served by recon's own web process.
        answer = httpx.get(console_url, follow_redirects=True, timeout=10)
        assert answer.status_code == 200
        assert "<form" in answer.text

        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        rest = proc.stdout.read()
        assert "stopping the sandbox and recon" in rest
        with pytest.raises(httpx.TransportError):
            httpx.get(console_url, timeout=3)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
