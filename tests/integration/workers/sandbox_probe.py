"""The sandbox behind a probe that counts requests and catches concurrent reads of one holding.

The probe wraps the sandbox's ASGI app (no recon code involved), so what it sees is exactly
what went over the wire: requests per route, activity requests per holding, and the largest
number of activity reads of one holding in flight at once (which must never exceed one).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs

from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer

ACTIVITY_PATH = "/v1/balances/activity"


class RequestProbe:
    """ASGI middleware recording request counts and per-holding concurrency of activity reads."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.activity_by_holding: Counter[str] = Counter()
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight_per_holding = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        with self.lock:
            self.requests[f"{scope['method']} {path}"] += 1
        if path != ACTIVITY_PATH:
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode())
        holding = (query.get("holdingRef") or ["?"])[0]
        with self.lock:
            self.activity_by_holding[holding] += 1
            self.in_flight[holding] += 1
            self.max_in_flight_per_holding = max(
                self.max_in_flight_per_holding, self.in_flight[holding]
            )
        try:
            await self.app(scope, receive, send)
        finally:
            with self.lock:
                self.in_flight[holding] -= 1

    def count(self, route: str) -> int:
        with self.lock:
            return sum(n for key, n in self.requests.items() if key.startswith(route))


@contextmanager
def probed_sandbox(config: SandboxConfig) -> Iterator[tuple[SandboxServer, RequestProbe]]:
    """A SandboxServer on a free port whose app is wrapped by a RequestProbe."""
    server = SandboxServer(config)
    probe = RequestProbe(server.app)
    server.app = probe  # type: ignore[assignment]
    with server:
        yield server, probe
