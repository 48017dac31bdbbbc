"""The outbound alert webhook, verified the way any receiver would: the standardwebhooks package,
behind a real HTTP server on loopback."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks.webhooks import Webhook

from foundation import Secret
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.store.models import Transfer
from tests.integration.reconciliation.builders import Store, at

SECRET = "whsec_" + base64.b64encode(b"alert-webhook-test-secret-32byte").decode()


class Receiver:
    """Records every POST; answers `status` (set it to 503 to play a receiver that is down)."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.status = 204
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def test_alert_changes_are_posted_signed_and_verifiable(
    session_factory: sessionmaker[Session], receiver: Receiver
) -> None:
    store = Store(session_factory)
    policy = ReconcilePolicy(
        finality_deadline_seconds=600,
        alert_webhook_url=receiver.url,
        alert_webhook_secret=Secret(SECRET),
    )
    source, dest = store.holding(locator=False), store.holding(locator=False)
    transfer = store.transfer(source, dest, 100, status="awaiting_finality", requested=at(0))

    receiver.status = 503
    first = run_pass(session_factory, policy, now=at(700))
    assert first.published is not None
    assert (first.published.sent, first.published.failed) == (0, 1)

    receiver.status = 204
    second = run_pass(session_factory, policy, now=at(730))
    assert second.published is not None and second.published.sent == 1
    with session_factory.begin() as s:
        s.execute(
            update(Transfer)
            .where(Transfer.id == transfer.id)
            .values(status="completed", is_terminal=True, is_successful=True)
        )
    run_pass(session_factory, policy, now=at(760))
    run_pass(session_factory, policy, now=at(790))  # nothing new: nothing sent

    verifier = Webhook(SECRET)
    messages = [verifier.verify(body, headers) for headers, body in receiver.received]
    assert [m["type"] for m in messages] == ["alert.opened", "alert.opened", "alert.resolved"]
    assert {m["data"]["kind"] for m in messages} == {"finality_overdue"}
    # The text for people reads as the report and the CLI do: words and a UTC time, no stamps.
    assert messages[0]["text"].startswith("[medium] alert ")
    assert "opened (finality overdue): transfer " in messages[0]["text"]
    assert (
        "still awaiting finality past its finality deadline (2026-11-22 12:10:00 UTC)"
        in (messages[0]["text"])
    )
    assert "resolved (finality overdue)" in messages[2]["text"]
    # The retry of the refused message carries the same id, so a receiver can deduplicate.
    ids = [headers["webhook-id"] for headers, _ in receiver.received]
    assert ids[0] == ids[1] != ids[2]

    tampered = json.loads(receiver.received[2][1])
    tampered["data"]["state"] = "open"
    with pytest.raises(Exception, match="signature"):
        verifier.verify(json.dumps(tampered).encode(), receiver.received[2][0])
