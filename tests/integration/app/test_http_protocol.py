"""The web process's HTTP (recon.cli.http_protocol): a request head past 16 KiB is refused and
its connection closed, 431 when it arrived whole and 400 when it never ends; a head just under
the limit, and a body far over it, are served."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from recon.cli.http_protocol import HEAD_LIMIT_BYTES, server_config

ACCEPTED = b'{"outcome":"accepted"}'


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(ACCEPTED))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": ACCEPTED})


class _Server(uvicorn.Server):
    """uvicorn's server, telling when it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


@contextmanager
def _server(parser: str = "h11") -> Iterator[tuple[str, int]]:
    """The web process's server configuration around `app`, on a free port, in a thread."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = _Server(server_config(app, "127.0.0.1", port, parser=parser))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        assert server.listening.wait(30), "the server did not start"
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        thread.join(10)


def _exchange(address: tuple[str, int], request: bytes) -> bytes:
    """Send one raw request and read until the server closes or has answered."""
    with socket.create_connection(address, timeout=10) as sock:
        with contextlib.suppress(ConnectionError):  # closed mid-send: its answer is readable
            sock.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received or not received.rstrip().endswith((b"}", b"bytes")):
            try:
                chunk = sock.recv(65536)
            except ConnectionError:
                break
            if not chunk:
                break
            received += chunk
        return received


def _request(header_bytes: int, body: bytes = b"{}") -> bytes:
    return (
        b"POST /one HTTP/1.1\r\nhost: x\r\nx-filler: "
        + b"a" * header_bytes
        + b"\r\ncontent-length: %d\r\n\r\n" % len(body)
        + body
    )


def test_a_head_past_the_limit_is_refused_and_a_large_body_is_not() -> None:
    with _server() as address:
        refused = _exchange(address, _request(HEAD_LIMIT_BYTES * 4))
        assert refused.startswith(b"HTTP/1.1 431 "), refused[:100]
        assert b"connection: close" in refused.lower()
        # A header line that never ends is cut off too, not buffered for as long as it grows.
        endless = b"POST /one HTTP/1.1\r\nhost: x\r\nx-filler: " + b"a" * HEAD_LIMIT_BYTES * 4
        cut_off = _exchange(address, endless)
        assert cut_off.startswith(b"HTTP/1.1 400 "), cut_off[:100]
        assert b"connection: close" in cut_off.lower()
        # Just under the limit, and a body 16 times the limit sent in the same write: fine.
        assert _exchange(address, _request(HEAD_LIMIT_BYTES - 200)).startswith(b"HTTP/1.1 200 ")
        large = _exchange(address, _request(100, b"[" + b"0," * (HEAD_LIMIT_BYTES * 8) + b"0]"))
        assert large.startswith(b"HTTP/1.1 200 "), large[:100]
        assert large.endswith(ACCEPTED)


def test_behind_a_proxy_httptools_still_refuses_a_whole_head_past_the_limit() -> None:
    """RECON_WEB_HTTP_PARSER=httptools leaves a never-ending head to the proxy in front, but a
    head that arrived whole is measured by recon's own layer, whichever parser read it."""
    with _server("httptools") as address:
        refused = _exchange(address, _request(HEAD_LIMIT_BYTES * 4))
        assert refused.startswith(b"HTTP/1.1 431 "), refused[:100]
        assert b"connection: close" in refused.lower()
        assert _exchange(address, _request(HEAD_LIMIT_BYTES - 200)).startswith(b"HTTP/1.1 200 ")
