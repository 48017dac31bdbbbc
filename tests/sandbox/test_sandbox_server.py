"""The sandbox as a real server: SandboxServer in a thread, background work in real time,
dropped connections on the wire, and ``python -m sandbox`` answering curl."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from sandbox.config import SandboxConfig
from sandbox.faults import Fault
from sandbox.server import SandboxServer
from tests.sandbox.sandbox_helpers import AUTH, COMPANY, NGN, SECRET, Receiver, new_key

ROOT = Path(__file__).resolve().parents[2]


def fast_config() -> SandboxConfig:
    return SandboxConfig(
        transfer_finality_delay_seconds=0.2,
        projection_lag_seconds=0.1,
        inbound_posting_delay_seconds=0.05,
        delivery_retry_schedule=(0.1, 0.2),
    )


def wait_until(check: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def test_answers_once_started_and_stops_clean() -> None:
    with SandboxServer(fast_config()) as server:
        # Ready when the block begins: the first request is answered, not refused.
        assert server.base_url.startswith("http://127.0.0.1:") and not server.base_url.endswith("/")
        r = httpx.get(server.base_url + "/v1/environment", headers=AUTH)
        assert r.status_code == 200
        port = int(server.base_url.rsplit(":", 1)[1])
    # Stopped when the block ends: nothing listens on its port any more.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_end_to_end_in_real_time(receiver: Receiver) -> None:
    with SandboxServer(fast_config()) as server, httpx.Client(base_url=server.base_url) as c:
        hook = c.post(
            "/company/v1/webhooks/register",
            headers=COMPANY,
            json={
                "url": receiver.url,
                "eventTypes": ["PAYMENT_RECEIVED", "TRANSACTION_COMPLETED"],
                "secret": SECRET,
            },
        ).json()["data"]

        def endpoint() -> dict[str, str]:
            body = {
                "template": "customer_balance_collection_child",
                "valueUnit": NGN,
                "owner": {
                    "kind": "existing_account_owner",
                    "ownerRef": new_key(),
                    "ownerKind": "business-entity",
                },
            }
            r = c.post(
                "/v1/programmable-endpoints",
                json=body,
                headers={**AUTH, "Idempotency-Key": new_key()},
            )
            value: dict[str, str] = r.json()["body"]["endpoint"]["value"]
            return value

        src, dst = endpoint(), endpoint()
        credit = {
            "accountRef": src["accountRef"],
            "endpointRef": src["endpointRef"],
            "holdingRef": src["holdingRef"],
            "valueUnit": NGN,
            "amountMinorUnits": "5000",
        }
        r = c.post(
            "/v1/sandbox/inbound-credits",
            json=credit,
            headers={**AUTH, "Idempotency-Key": new_key()},
        )
        assert r.status_code == 202

        def settled() -> bool:
            q = {"accountRef": src["accountRef"], "endpointRef": src["endpointRef"]}
            bal = c.get("/v1/balances/current", params=q, headers=AUTH).json()
            return bool(bal["body"]["value"]["holdingBalances"][0]["settledMinorUnits"] == "5000")

        wait_until(settled)
        transfer = {
            "sourceAccountRef": src["accountRef"],
            "sourceEndpointRef": src["endpointRef"],
            "sourceHoldingRef": src["holdingRef"],
            "valueUnit": NGN,
            "amountMinorUnits": "1200",
            "destination": {
                "kind": "internal-endpoint",
                "accountRef": dst["accountRef"],
                "endpointRef": dst["endpointRef"],
                "holdingRef": dst["holdingRef"],
            },
        }
        r = c.post("/v1/transfers", json=transfer, headers={**AUTH, "Idempotency-Key": new_key()})
        assert r.status_code == 202
        ref = r.json()["body"]["transfer"]["value"]["transferRef"]
        wait_until(
            lambda: (
                c.get(f"/v1/transfers/{ref}/status", headers=AUTH).json()["body"]["value"][
                    "isSuccessful"
                ]
                is True
            )
        )
        got = receiver.wait_for(2)
        events = [Webhook(SECRET).verify(g.body, g.headers)["event"] for g in got]
        assert sorted(events) == ["PAYMENT_RECEIVED", "TRANSACTION_COMPLETED"]
        wait_until(lambda: server.state.webhooks[hook["webhookId"]].successful == 2)
        log = c.get("/_sandbox/deliveries").json()["deliveries"]
        assert {d["outcome"] for d in log} == {"delivered"}


def test_retries_in_real_time(receiver: Receiver) -> None:
    receiver.statuses = [500, 500]
    with SandboxServer(fast_config()) as server:
        server.state.hub.register(receiver.url, ["KYC_VERIFIED"], SECRET, None, True, None)
        ep = server.state.create_endpoint("customer_balance_internal", new_key(), "x", "NGN")
        server.state.emit_kyc_verified(ep.endpoint_ref)
        got = receiver.wait_for(3)
        assert len({g.headers["webhook-id"] for g in got}) == 1


def test_other_body_leaves_only_after_the_original_is_answered(receiver: Receiver) -> None:
    """With deliveries on a thread pool, two bodies in flight together reach the receiver in
    either order; the re-send must wait for the original's answer, so the original is first."""
    receiver.delay = 0.3
    with SandboxServer(fast_config()) as server:
        server.state.hub.register(receiver.url, ["KYC_VERIFIED"], SECRET, None, True, None)
        ep = server.state.create_endpoint("customer_balance_internal", new_key(), "x", "NGN")
        server.state.faults.add_delivery(Fault(target="KYC_VERIFIED", kind="same_id_other_body"))
        event_id = server.state.emit_kyc_verified(ep.endpoint_ref)
        first, second = receiver.wait_for(2)
    original = next(e for e in server.state.hub.events if e["id"] == event_id)
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.json() == original != second.json(), "the original body comes first"
    assert second.arrived - first.arrived >= receiver.delay, "sent while the original was open"


def test_dropped_connection_on_the_wire() -> None:
    with SandboxServer(fast_config()) as server, httpx.Client(base_url=server.base_url) as c:
        c.post(
            "/_sandbox/faults/routes",
            json={
                "route": "POST /v1/programmable-endpoints",
                "kind": "drop_connection",
                "count": 1,
            },
        )
        body = {
            "template": "customer_balance_internal",
            "valueUnit": NGN,
            "owner": {
                "kind": "existing_account_owner",
                "ownerRef": new_key(),
                "ownerKind": "business-entity",
            },
        }
        key = new_key()
        with pytest.raises(httpx.RemoteProtocolError):
            c.post(
                "/v1/programmable-endpoints", json=body, headers={**AUTH, "Idempotency-Key": key}
            )
        # the write took effect: a retry with the same key replays it, nothing is made twice
        r = c.post(
            "/v1/programmable-endpoints", json=body, headers={**AUTH, "Idempotency-Key": key}
        )
        assert r.status_code == 200
        assert len(server.state.directory.endpoints) == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_python_m_sandbox_answers_curl() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}/v1/environment"

        def up() -> bool:
            try:
                return httpx.get(url, headers=AUTH).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, timeout=15)
        curl = shutil.which("curl")
        if curl is None:
            pytest.skip("curl not installed")
        out = subprocess.run(
            [curl, "-s", "-H", "Authorization: Bearer ak_test_recon", url],
            capture_output=True,
            check=True,
            timeout=10,
        ).stdout
        value = json.loads(out)["body"]["value"]
        assert value["environmentKind"] == "DemoSandbox"
        out = subprocess.run(
            [curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
            capture_output=True,
            check=True,
            timeout=10,
        ).stdout
        assert out == b"401"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_recon_sandbox_plays_the_fee_schedule_it_is_given() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "recon", "sandbox", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "RECON_SANDBOX_FEES": "flat=2500,bp=10,bearer=split,drift=-5"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}/_sandbox/fees"

        def up() -> bool:
            try:
                return httpx.get(url).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, timeout=15)
        assert httpx.get(url).json()["schedule"] == {
            "flatMinorUnits": 2500,
            "basisPoints": 10,
            "bearer": "split",
            "perBearer": {},
            "driftMinorUnits": -5,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("flat=-1", "flat takes a whole number"),
        ("bearer=nobody", "unknown fee bearer 'nobody'"),
        ("rate=5", "names are flat, bp, bearer, drift"),
    ],
)
def test_a_bad_fee_schedule_stops_start_up_saying_why(spec: str, words: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox", "--port", str(free_port()), "--fees", spec],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert words in done.stderr
