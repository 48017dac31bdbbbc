"""The web process's HTTP protocol: each response leaves in one write, and nothing is lost,
reordered or delayed past its event-loop iteration (streams, keep-alive, pipelining); a
request head past 16 KiB is refused, a large body is not mistaken for one."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from recon.cli.http_protocol import HEAD_LIMIT_BYTES, HttpProtocol

#: Seconds between the parts of the streamed response.
PAUSE = 0.5
REQUEST = b"POST /one HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for n in range(3):
            await asyncio.sleep(PAUSE)
            await send({"type": "http.response.body", "body": b"part%d;" % n, "more_body": True})
        await send({"type": "http.response.body", "body": bytearray(b"end")})
        return
    if scope["path"] == "/empty":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b'{"outcome":"accepted"}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Socket(asyncio.Transport):
    """Stands in for the socket: records what the protocol writes, one entry per write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _writes_of_one_response(protocol_class: type[HttpToolsProtocol]) -> list[bytes]:
    async def main() -> list[bytes]:
        config = uvicorn.Config(app, log_config=None, access_log=False)
        config.load()
        protocol = protocol_class(config, ServerState(), {}, asyncio.get_running_loop())
        transport = _Socket()
        protocol.connection_made(transport)
        protocol.data_received(REQUEST)
        for _ in range(10):
            await asyncio.sleep(0)
        protocol.connection_lost(None)
        return transport.writes

    return asyncio.run(main())


def test_a_response_with_a_body_is_one_write() -> None:
    assert len(_writes_of_one_response(HttpToolsProtocol)) == 2  # uvicorn's own: head, body
    writes = _writes_of_one_response(HttpProtocol)
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes[0].endswith(b'\r\n\r\n{"outcome":"accepted"}')


@contextmanager
def _server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, http=HttpProtocol)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_streams_keep_alive_and_pipelining_arrive_whole_and_in_order() -> None:
    with _server() as base, httpx.Client(base_url=base, timeout=10) as client:
        for _ in range(3):  # one keep-alive connection
            assert client.post("/one", content=b"{}").json() == {"outcome": "accepted"}
            assert client.post("/empty", content=b"").status_code == 204
        started = time.monotonic()
        received, part1_at = b"", None
        with client.stream("POST", "/stream", content=b"{}") as response:
            for chunk in response.iter_raw():
                received += chunk
                if part1_at is None and b"part1;" in received:
                    part1_at = time.monotonic() - started
        assert received == b"part0;part1;part2;end"
        # Sent alone at 2 pauses, it leaves at once: not held until part2 joins it a pause later.
        assert part1_at is not None and part1_at < 2.6 * PAUSE, part1_at

        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(REQUEST * 3)  # pipelined: three requests in one segment
            received = b""
            while received.count(b'{"outcome":"accepted"}') < 3:
                chunk = sock.recv(65536)
                assert chunk, received
                received += chunk
        assert received.count(b"HTTP/1.1 200 OK\r\n") == 3


def _exchange(base: str, request: bytes) -> bytes:
    """Send one raw request and read until the server closes or has answered."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
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
    with _server() as base:
        refused = _exchange(base, _request(HEAD_LIMIT_BYTES * 4))
        assert refused.startswith(b"HTTP/1.1 431 "), refused[:100]
        assert b"connection: close" in refused
        # A header line that never ends is cut off too, not buffered for as long as it grows.
        endless = b"POST /one HTTP/1.1\r\nhost: x\r\nx-filler: " + b"a" * HEAD_LIMIT_BYTES * 4
        assert _exchange(base, endless).startswith(b"HTTP/1.1 431 ")
        # Just under the limit, and a body 16 times the limit sent in the same write: fine.
        assert _exchange(base, _request(HEAD_LIMIT_BYTES - 200)).startswith(b"HTTP/1.1 200 ")
        large = _exchange(base, _request(100, b"[" + b"0," * (HEAD_LIMIT_BYTES * 8) + b"0]"))
        assert large.startswith(b"HTTP/1.1 200 "), large[:100]
