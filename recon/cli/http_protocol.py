"""uvicorn's httptools protocol with two changes: one write per response, and bounded heads.

One write: uvicorn writes the status line and headers when the app sends
`http.response.start`, and the body when it sends `http.response.body`: two send() calls, two
TCP segments and two wake-ups of the client for every response with a body, and the
receiver's 200 has one. A send costs the web process more than verifying a signature on the
2-core reference machine, so each write is held until the next one joins it, or until the
event loop's current iteration ends, whichever comes first: the head and body of a response
leave together, and nothing waits longer than the iteration it was written in. Measured with
bench/receiver.py: 9% less CPU per accepted delivery in the web process.

Bounded heads: h11, uvicorn's parser without httptools, refuses a request whose line and
headers exceed 16 KiB; httptools has no bound of its own, and would buffer a header of
megabytes for anyone who connects, before any check of recon's runs. A head past
HEAD_LIMIT_BYTES is answered 431 and its connection closed.

Everything else about the connection (parsing, flow control, keep-alive, upgrades) is
uvicorn's own. The benchmark's bare endpoint runs on the same protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, cast

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

#: Most bytes read for one request's line and headers before they are complete: h11's bound
#: (uvicorn's other parser), above any genuine delivery's headers, far below what would hurt.
HEAD_LIMIT_BYTES: Final = 16 * 1024
#: What the 431 says.
_HEAD_TOO_LARGE_DETAIL: Final = f"request line and headers exceed {HEAD_LIMIT_BYTES} bytes".encode()
#: The answer to a head past the limit, written directly when the head never ends.
_HEAD_TOO_LARGE: Final = b"".join(
    (
        STATUS_LINE[431],
        b"content-type: text/plain; charset=utf-8\r\n",
        b"content-length: %d\r\n" % len(_HEAD_TOO_LARGE_DETAIL),
        b"connection: close\r\n\r\n",
        _HEAD_TOO_LARGE_DETAIL,
    )
)

Data = bytes | bytearray | memoryview


class _HoldingTransport:
    """A transport whose writes wait for the next write or the end of the loop iteration."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: Data) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(b"".join((held, data)))
            return
        if not data:
            return
        # Copied unless immutable: the caller may reuse its buffer once write() returned.
        self._held = data if isinstance(data, bytes) else bytes(data)
        self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


async def _head_too_large(_scope: Any, _receive: Any, send: Any) -> None:
    """Stands in for the app for a request whose head was too large: 431, then close."""
    await send(
        {
            "type": "http.response.start",
            "status": 431,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", b"%d" % len(_HEAD_TOO_LARGE_DETAIL)),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _HEAD_TOO_LARGE_DETAIL})


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol: writes joined per response, request heads bounded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The current head: its size as parsed (line and headers), and the bytes read while it
        # was incomplete (None once complete: a body is bounded by the receiver, not here).
        self._head_size = 0
        self._head_read: int | None = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        holding = _HoldingTransport(cast(asyncio.Transport, transport), self.loop)
        super().connection_made(cast(asyncio.Transport, holding))

    def data_received(self, data: bytes) -> None:
        if self._head_read is not None:
            self._head_read += len(data)
        super().data_received(data)
        if self._head_read is not None and self._head_read > HEAD_LIMIT_BYTES:
            # Still no end to the head: one endless header line, say. Nothing was started
            # for this request, so the answer is written here, as uvicorn writes its 400.
            self._head_read = None
            self.transport.write(_HEAD_TOO_LARGE)
            self.transport.close()

    def on_message_begin(self) -> None:
        self._head_size = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._head_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_size += len(name) + len(value) + 4  # ": " and CRLF
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_read = None
        if self._head_size <= HEAD_LIMIT_BYTES:
            super().on_headers_complete()
            return
        # A head that arrived whole in one read: uvicorn answers it with the 431 instead of the
        # app, through its usual request cycle (so a body that follows is dealt with as usual).
        app, self.app = self.app, _head_too_large
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        self._head_read = 0  # what follows on this connection is the next request's head
        super().on_message_complete()
