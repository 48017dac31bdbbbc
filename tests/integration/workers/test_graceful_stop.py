"""SIGTERM (the Procfile's stop) is a graceful stop in every process: the worker and the
scheduler finish or hand back what they hold, say so in their log, and exit 0.

`recon web` is signalled the same way in tests/integration/app/test_web_process.py. Here each
process runs as a real child, is signalled once it has started, and is judged by its exit
status and the line it writes last.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.integration.workers.worker_processes import spawn, wait_started

#: Long enough for a stop on a busy CI machine: the worker's own stop timeout is 30 s.
STOP_SECONDS = 60


@pytest.mark.parametrize(
    ("args", "with_redis", "last_line"),
    [
        (["worker", "--threads", "2"], False, "embedded.stopped"),
        (["worker", "--threads", "2"], True, "worker.stopped"),
        (["scheduler"], True, "scheduler.stopped"),
    ],
    ids=["embedded worker", "worker", "scheduler"],
)
def test_sigterm_stops_a_process_gracefully(
    base_env: dict[str, str],
    db_url: str,
    redis_url: str,
    tmp_path: Path,
    args: list[str],
    with_redis: bool,
    last_line: str,
) -> None:
    if with_redis and db_url.startswith("sqlite"):
        pytest.skip("processes sharing Redis share a PostgreSQL store")
    env = {**base_env, "DATABASE_URL": db_url, "RECON_LOG_LEVEL": "info"}
    if with_redis:
        env["REDIS_URL"] = redis_url
    log = tmp_path / "process.log"
    process = spawn(args, env, log)
    try:
        wait_started([log])
        process.send_signal(signal.SIGTERM)
        code = process.wait(STOP_SECONDS)
    except (AssertionError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
        raise AssertionError(log.read_text()[-3000:]) from None
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert '"process.stopping"' in text and last_line in text, text[-3000:]
