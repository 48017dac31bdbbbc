"""`recon web` as the Procfile runs it: in the embedded default the same process processes
what it receives (receiver -> enqueue -> in-process workers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from tests.integration.app.receiver_helpers import (
    ADMIN,
    PATH,
    SECRET,
    free_port,
    signed_headers,
    wait_for,
)


def test_embedded_web_process_processes_what_it_receives(
    base_env: dict[str, str], db_url: str, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RECON_")},
        **base_env,
        "DATABASE_URL": db_url,
        "RECON_WEBHOOK_SECRETS": SECRET,
        "RECON_LOG_LEVEL": "warning",
    }
    env.pop("REDIS_URL", None)
    log = tmp_path / "web.log"
    process, base = _start_web(env, port, log)
    try:
        event_id = str(uuid.uuid4())
        body = json.dumps(
            {
                "id": event_id,
                "event": "KYC_VERIFIED",
                "createdAt": "2026-11-22T00:48:01.123Z",
                "data": {
                    "transferRef": None,
                    "receiptRef": None,
                    "accountRef": str(uuid.uuid4()),
                    "endpointRef": str(uuid.uuid4()),
                    "holdingRef": str(uuid.uuid4()),
                    "accountNumber": "0123456789",
                    "bankCode": "000",
                    "amount": None,
                    "currency": None,
                    "status": None,
                    "narration": None,
                },
            }
        ).encode()
        response = httpx.post(
            base + PATH,
            content=body,
            headers=signed_headers(body, delivery_id=event_id),
            timeout=30,  # generous: CI runs this beside other load
        )
        assert response.status_code == 200, response.text

        def processed() -> bool:
            items = httpx.get(f"{base}/deliveries", headers=ADMIN, timeout=30).json()["items"]
            return bool(items) and items[0]["state"] == "processed"

        wait_for(processed, 60, "the embedded worker to process the delivery")
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def _start_web(env: dict[str, str], port: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`recon web` on `port` as a process of its own, logging to `log`, once it answers."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "recon", "web", "--no-register", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(base) or process.poll() is not None, 30, "recon web to start")
        assert process.poll() is None, log.read_text()
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process, base


def _up(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_sigterm_stops_the_embedded_workers_before_the_web_process_exits(
    base_env: dict[str, str], db_url: str, tmp_path: Path
) -> None:
    """The Procfile's stop (SIGTERM) is graceful in `recon web` too: uvicorn finishes its
    requests, then the embedded workers and scheduler stop (finishing their current messages)
    and the process exits 0. uvicorn used to re-raise the signal into the default handler,
    which killed the process before the workers' stop ran (no `embedded.stopped` line)."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RECON_")},
        **base_env,
        "DATABASE_URL": db_url,
        # No secret yet (the webhook is registered later): said once, not at every refresh.
        "RECON_LOG_LEVEL": "info",
        "RECON_LOG_FORMAT": "json",
    }
    env.pop("REDIS_URL", None)
    if db_url.startswith("sqlite"):
        # On SQLite, the laptop's embedded default: the process makes and migrates its store.
        env.pop("DATABASE_URL")
        env["RECON_STATE_DIR"] = str(tmp_path / "state")
    log = tmp_path / "web.log"
    process, _ = _start_web(env, port, log)
    try:
        process.send_signal(signal.SIGTERM)
        assert process.wait(40) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text()
    assert "embedded.stopped" in text, text[-3000:]
    assert "scheduler.stopped" in text, text[-3000:]
    # A start says each thing once: no Alembic plugin lines, "no webhook secret" once.
    assert "setup plugin" not in text
    assert text.count('"signing_keys.none"') == 1, text[:3000]
