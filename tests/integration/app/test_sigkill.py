"""Killed mid-load, the web process has acknowledged nothing it had not committed.

`recon web` runs as a real process; threads fire signed deliveries at it; it is killed with
SIGKILL while requests are in flight; every delivery id that got a 2xx must be in the store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from reconciliation.store.db import make_engine
from reconciliation.store.models import Delivery
from tests.integration.app.receiver_helpers import (
    PATH,
    SECRET,
    event_body,
    free_port,
    signed_headers,
    wait_for,
)

#: Acknowledged deliveries after which the process is killed (mid-load: senders keep going).
KILL_AFTER_ACKS = 400
SENDERS = 12

pytestmark = pytest.mark.slow


def test_every_acknowledged_delivery_survives_sigkill(
    base_env: dict[str, str], db_url: str, tmp_path: Path
) -> None:
    """Invariant 1: the web process killed mid-burst: every delivery it acknowledged is in the
    store."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RECON_")},
        **base_env,
        "DATABASE_URL": db_url,
        "RECON_WEBHOOK_SECRETS": SECRET,
        "RECON_LOG_LEVEL": "warning",
    }
    env.pop("REDIS_URL", None)
    log = (tmp_path / "web.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recon",
            "web",
            "--no-register",
            "--no-workers",
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _healthy(base) or process.poll() is not None, 30, "recon web to start")
        assert process.poll() is None, (tmp_path / "web.log").read_text()

        acknowledged: list[str] = []
        refused: list[int] = []
        lock = threading.Lock()
        stop = threading.Event()

        def send() -> None:
            with httpx.Client(base_url=base, timeout=5) as client:
                while not stop.is_set():
                    delivery_id = str(uuid.uuid4())
                    body = event_body(event_id=delivery_id)
                    try:
                        response = client.post(
                            PATH,
                            content=body,
                            headers=signed_headers(body, delivery_id=delivery_id),
                        )
                    except httpx.HTTPError:
                        if process.poll() is not None:
                            return
                        continue
                    with lock:
                        if 200 <= response.status_code < 300:
                            acknowledged.append(delivery_id)
                        else:
                            refused.append(response.status_code)

        senders = [threading.Thread(target=send) for _ in range(SENDERS)]
        for s in senders:
            s.start()
        wait_for(lambda: len(acknowledged) >= KILL_AFTER_ACKS, 60, "deliveries to be acknowledged")
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        stop.set()  # a request in flight ends in an error now; each sender then returns
        for s in senders:
            s.join(10)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()

    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            in_store = set(connection.execute(select(Delivery.delivery_id)).scalars())
    finally:
        engine.dispose()
    missing = [d for d in acknowledged if d not in in_store]
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged deliveries were lost"
    assert refused == []
    assert len(acknowledged) >= KILL_AFTER_ACKS


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
