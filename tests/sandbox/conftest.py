"""Fixtures for the sandbox contract suite.

Most tests run the app in-process (Litestar's TestClient) with background work off, and move
time themselves: ``world.advance(seconds)`` moves the clock and runs whatever became due.
Webhook deliveries go over real HTTP to a small threaded receiver.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from litestar.testing import TestClient

from sandbox.app import create_app
from sandbox.config import SandboxConfig
from sandbox.state import SandboxState
from tests.sandbox.sandbox_helpers import Received, Receiver, World, sandbox_config


def make_world(config: SandboxConfig) -> Iterator[World]:
    state = SandboxState(config)
    with TestClient(create_app(state=state)) as client:
        yield World(state, client)
    state.close()


@pytest.fixture(scope="session")
def _shared_world() -> Iterator[World]:
    yield from make_world(sandbox_config())


@pytest.fixture
def world(_shared_world: World) -> World:
    """A fresh world per test on one app (building the app is the slow part)."""
    state = _shared_world.state
    state.reset()
    state.keys.clear()
    state.keys.update(state.config.gateway_keys)
    return _shared_world


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    sink = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            arrived = time.monotonic()
            if sink.delay:
                time.sleep(sink.delay)
            with sink.lock:
                headers = {k.lower(): v for k, v in self.headers.items()}
                sink.received.append(Received(headers, body, arrived))
                status = sink.statuses.pop(0) if sink.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield sink
    server.shutdown()
    server.server_close()
