"""Helpers of the receiver's integration tests: signing, polling, serving the app over HTTP."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import uvicorn
from litestar import Litestar
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.models import Delivery
from upstream.signatures.signing import sign_delivery

T = TypeVar("T")

SECRET = "whsec_" + base64.b64encode(b"receiver-integration-tests-32byte").decode()
ADMIN_TOKEN = "admin-token-for-tests-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PATH = "/webhooks/company"


def event_body(event: str = "PAYMENT_RECEIVED", event_id: str | None = None, **data: Any) -> bytes:
    """A delivery body in the shape docs/decisions.md fixes."""
    return json.dumps(
        {
            "id": event_id or str(uuid.uuid4()),
            "event": event,
            "createdAt": "2026-11-22T00:48:01.123Z",
            "data": {"amount": "1500.50", "currency": "NGN", **data},
        },
        separators=(",", ":"),
    ).encode()


def signed_headers(
    body: bytes,
    *,
    delivery_id: str | None = None,
    secret: str = SECRET,
    timestamp: int | None = None,
    scheme: str = "standard",
) -> dict[str, str]:
    """Content type plus the signature headers of `body`."""
    headers = sign_delivery(
        scheme,
        secret,
        delivery_id=delivery_id or str(uuid.uuid4()),
        timestamp=int(time.time()) if timestamp is None else timestamp,
        body=body,
    )
    return {"content-type": "application/json", **headers}


def wait_for(check: Callable[[], T | None], timeout: float = 10.0, what: str = "condition") -> T:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def stored(factory: sessionmaker[Session]) -> list[Delivery]:
    """Every inbox row, oldest first."""
    with factory() as session:
        return list(session.scalars(select(Delivery).order_by(Delivery.id)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServedApp:
    """The app under a real uvicorn in a thread, so the sandbox can deliver over HTTP."""

    def __init__(self, app: Litestar, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_config=None, access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="recon-web", daemon=True)

    def __enter__(self) -> ServedApp:
        self._thread.start()
        wait_for(lambda: self._server.started, what="the web app to start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(15)
