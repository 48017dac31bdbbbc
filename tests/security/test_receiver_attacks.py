"""Unauthenticated clients against the receiver of a real `recon web`: floods, tricks, stalls.

Before: each refusal logged the sender's `webhook-id` whole (a 100 KB header made about
25 MB/s of log from one client); a repeated `webhook-id` was silently resolved by the last
copy; a client could trickle a body forever; connections had no cap.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import time
from collections.abc import Callable

import httpx

from tests.integration.app.receiver_helpers import (
    PATH,
    SECRET,
    event_body,
    signed_headers,
    wait_for,
)
from tests.security.conftest import WebProcess

#: A claimed delivery id far longer than any real one, below uvicorn's own header limit.
HUGE_ID = "x" * 15_000
#: How often the refusal-log test refuses once more while it waits for a new second's line.
REASK_SECONDS = 0.2


def _refusal_lines(web: WebProcess) -> list[dict[str, object]]:
    lines = []
    for line in web.log_text().splitlines():
        if '"webhook.refused"' in line:
            lines.append(json.loads(line))
    return lines


def _counted(lines: list[dict[str, object]]) -> int:
    """Refusals the log accounts for: its lines and the counts of those each left out."""
    return sum(int(str(line["suppressed_since_last"])) for line in lines) + len(lines)


def test_refusals_with_huge_headers_make_few_short_log_lines(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    before = web.log.stat().st_size
    sent = 400
    with httpx.Client(base_url=web.base, timeout=30) as client:
        for _ in range(sent):
            response = client.post(
                PATH,
                content=b"{}",
                headers={
                    "content-type": "application/json",
                    "webhook-id": HUGE_ID,
                    "webhook-timestamp": str(int(time.time())),
                    "webhook-signature": "v1,AAAA",
                },
            )
            assert response.status_code == 401
    # Those left out are counted on the next line logged, the first refusal of a later second:
    # refuse once more until that line has counted every refusal.
    asked_at = 0.0

    def every_refusal_counted() -> bool:
        nonlocal sent, asked_at
        if _counted(_refusal_lines(web)) == sent:
            return True
        if time.monotonic() - asked_at >= REASK_SECONDS:
            response = httpx.post(
                web.base + PATH,
                content=b"{}",
                headers={"content-type": "application/json"},
                timeout=30,
            )
            assert response.status_code == 401
            sent, asked_at = sent + 1, time.monotonic()
        return False

    wait_for(every_refusal_counted, 10, "a refusal line counting those left out")
    lines = _refusal_lines(web)
    grown = web.log.stat().st_size - before
    # 400 refusals of 15 KB ids: 6 MB of log before; now a handful of bounded lines.
    assert grown < 20_000, grown
    assert all(len(str(line.get("claimed_delivery_id") or "")) < 300 for line in lines)
    assert len(lines) >= 2 and _counted(lines) == sent


def test_a_repeated_webhook_id_with_another_value_is_refused(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    body = event_body(event_id="evt_genuine")
    genuine = signed_headers(body, delivery_id="evt_genuine")
    # The signature covers "evt_genuine"; a second copy names another id. Which one is filed?
    headers = [(k, v) for k, v in genuine.items() if k != "webhook-id"]
    headers += [("webhook-id", "evt_smuggled"), ("webhook-id", "evt_genuine")]
    response = httpx.post(web.base + PATH, content=body, headers=headers, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"] == "duplicate_header"
    assert "webhook-id" in response.json()["detail"]
    # The same delivery with the header once is accepted.
    response = httpx.post(web.base + PATH, content=body, headers=genuine, timeout=30)
    assert response.status_code == 200


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _read_response(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection (or stops sending for 30 s)."""
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_body_trickled_too_slowly_is_cut_off_with_408(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process({**security_env, "RECON_WEBHOOK_BODY_TIMEOUT_SECONDS": "1"})
    with _connect(web.base) as sock:
        sock.sendall(
            f"POST {PATH} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            "content-length: 1000\r\n\r\n{".encode()
        )
        answer = _read_response(sock)
    # The client never sends the rest nor gives up: only the receiver's deadline ends this.
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"body_timeout" in answer


def test_connections_beyond_the_limit_are_refused_not_queued(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process({**security_env, "RECON_WEB_MAX_CONNECTIONS": "4"})
    idle = [_connect(web.base) for _ in range(4)]
    try:
        # Once the server has taken the idle connections in, the next one is refused at once.
        wait_for(
            lambda: httpx.get(f"{web.base}/health", timeout=30).status_code == 503,
            30,
            "a fifth connection to be refused",
        )
    finally:
        for sock in idle:
            sock.close()
    wait_for(
        lambda: httpx.get(f"{web.base}/health", timeout=30).status_code == 200,
        30,
        "the slots to free up",
    )


def test_an_idle_keep_alive_connection_is_closed(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process({**security_env, "RECON_WEB_KEEP_ALIVE_SECONDS": "1"})
    with _connect(web.base) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        started = time.monotonic()
        answer = _read_response(sock)
        held = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 200")
    # Closed after about 1 s of idleness (uvicorn's own default, before, was 5 s).
    assert held < 4, held


def test_a_wrong_signature_is_not_told_how_many_secrets_are_accepted(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    """Before: the 401 said `no v1 signature matches any of the 2 accepted secret(s)`, telling
    anyone that a rotation was in progress. The log line keeps the count for the operator."""
    second = "whsec_" + base64.b64encode(hashlib.sha256(b"second secret").digest()).decode()
    env = {**security_env, "RECON_WEBHOOK_SECRETS": f"{SECRET},{second}"}
    web = web_process(env, "--no-workers")
    body = event_body()
    headers = signed_headers(body, secret="whsec_" + base64.b64encode(bytes(range(32))).decode())
    answer = httpx.post(web.base + PATH, content=body, headers=headers, timeout=30)
    assert answer.status_code == 401, answer.text
    assert "secret(s)" not in answer.text and " 2 " not in answer.text, answer.text
    assert "no v1 signature matches an accepted secret" in answer.text
    assert "2 accepted key(s) tried" in web.log_text()
