"""`recon worker` and `recon scheduler` as real child processes, for the reliability tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A recon process with exactly this environment; its output goes to `log` (appended)."""
    out = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "recon", *args],
        env={"PATH": os.environ.get("PATH", ""), **env, "RECON_LOG_FORMAT": "json"},
        stdout=out,
        stderr=subprocess.STDOUT,
    )


def stop_all(processes: list[subprocess.Popen[bytes]], timeout: float = 30) -> list[int]:
    """SIGTERM each, wait, and return their exit codes (a hung one is killed and reported)."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            process.kill()
            codes.append(process.wait())
    return codes


def tail_logs(directory: Path, chars: int = 3000) -> str:
    """The end of every log in `directory`, for a failure message."""
    return "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-chars:]}"
        for log in sorted(directory.glob("*.log"))
    )


def wait_started(logs: list[Path], seconds: float = 60) -> None:
    """Wait until each log shows its process's start-up line (worker or scheduler)."""
    import time

    deadline = time.monotonic() + seconds
    for log in logs:
        while not (
            log.exists()
            and ("worker.started" in (text := log.read_text()) or "scheduler.started" in text)
        ):
            if time.monotonic() > deadline:
                raise AssertionError(f"{log.name}: the process did not start within {seconds}s")
            time.sleep(0.1)
