"""An httpx transport that hands each request to an ASGI app in this process.

httpx ships an ASGI transport for its async client only; recon's clients are sync. This one
runs the app on an event loop in a background thread and blocks the calling thread until the
app has answered, so a sync client talks to the sandbox with no socket, no server and no
network stack in between: what remains is the app's own work and the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import httpx


class InProcessASGITransport(httpx.BaseTransport):
    """Sync transport to an ASGI app; start the app's lifespan with `start()` first."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="asgi")
        self._lifespan_done: asyncio.Event | None = None
        self._thread.start()

    def start(self) -> InProcessASGITransport:
        """Run the app's lifespan startup (background workers of the sandbox start there)."""
        ready = asyncio.run_coroutine_threadsafe(self._startup(), self._loop)
        ready.result(timeout=30)
        return self

    async def _startup(self) -> None:
        started = asyncio.Event()
        self._lifespan_done = asyncio.Event()
        messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        await messages.put({"type": "lifespan.startup"})

        async def receive() -> dict[str, Any]:
            return await messages.get()

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.startup.complete":
                started.set()

        self._lifespan_queue = messages
        self._lifespan_task = asyncio.ensure_future(
            self._app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
        )
        await started.wait()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Run the request through the app and return its whole response."""
        future = asyncio.run_coroutine_threadsafe(self._call(request), self._loop)
        status, headers, body = future.result()
        return httpx.Response(status, headers=headers, content=body, request=request)

    async def _call(self, request: httpx.Request) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        body = request.read()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (request.url.host, request.url.port or 80),
            "client": ("127.0.0.1", 0),
        }
        sent = False
        status = 500
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.Event().wait()  # no disconnect while the app runs
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self._app(scope, receive, send)
        return status, headers, b"".join(chunks)

    def close(self) -> None:
        """Stop the app's lifespan and the loop."""
        if self._lifespan_done is not None:

            async def shutdown() -> None:
                await self._lifespan_queue.put({"type": "lifespan.shutdown"})
                await asyncio.wait_for(self._lifespan_task, timeout=10)

            # Closing down: a lifespan that will not shut down is not worth a traceback.
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=15)
            self._lifespan_done = None
        self._loop.call_soon_threadsafe(self._loop.stop)
