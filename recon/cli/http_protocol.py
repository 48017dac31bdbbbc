"""How `recon web` speaks HTTP: uvicorn's public options, and a thin ASGI layer for the heads.

Bounded heads: a request whose line and headers exceed HEAD_LIMIT_BYTES is refused before any
check of recon's runs, so nobody can make the web process buffer a header of megabytes.
uvicorn's h11 parser holds at most that much of a head that has not ended yet
(`h11_max_incomplete_event_size`) and answers the rest 400, connection closed; a head that
arrived whole in one read is measured by `bounded_heads` and answered 431, connection closed.
httptools, uvicorn's faster parser, has no such bound, and bounding it took a subclass of
uvicorn's private protocol class, which the next uvicorn release could break unseen: h11 costs
more CPU per request (docs/decisions.md, "Receiving", has the figures), the price of the bound.
Behind a proxy that caps request heads (docs/operations.md), that bound is the proxy's, and
RECON_WEB_HTTP_PARSER=httptools buys the CPU back; a head that arrived whole is still measured
by `bounded_heads`.

The bench's bare endpoint is served by `serve` too, so its ratio compares like with like.
"""

from __future__ import annotations

from typing import Any, Final

import uvicorn

#: Most bytes of one request's line and headers: h11's own default bound, above any genuine
#: delivery's headers, far below what would hurt.
HEAD_LIMIT_BYTES: Final = 16 * 1024
#: What the 431 says.
HEAD_TOO_LARGE: Final = f"request line and headers exceed {HEAD_LIMIT_BYTES} bytes".encode()

ASGIApp = Any


def head_bytes(scope: dict[str, Any]) -> int:
    """The size of a request's line and headers as the client sent them (about: the method,
    version and separators are left out, the target and each header line counted)."""
    headers = sum(len(name) + len(value) + 4 for name, value in scope["headers"])  # ": ", CRLF
    return len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + headers


def bounded_heads(app: ASGIApp) -> ASGIApp:
    """`app`, with a request whose head is past HEAD_LIMIT_BYTES answered 431 instead."""

    async def bounded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or head_bytes(scope) <= HEAD_LIMIT_BYTES:
            await app(scope, receive, send)
            return
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", b"%d" % len(HEAD_TOO_LARGE)),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 431, "headers": headers})
        await send({"type": "http.response.body", "body": HEAD_TOO_LARGE})

    return bounded


def server_config(
    app: ASGIApp, host: str, port: int, *, parser: str = "h11", **options: Any
) -> uvicorn.Config:
    """How `recon web` serves `app`: one process, heads bounded, uvloop (installed with recon),
    with `parser` (RECON_WEB_HTTP_PARSER: `h11`, or `httptools` behind a proxy that caps heads).

    structlog owns logging (foundation.logs); a line per request would cost more than the
    receiver's own work, and refusals are logged by the receiver itself.
    """
    return uvicorn.Config(
        bounded_heads(app),
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        server_header=False,
        http=parser,
        h11_max_incomplete_event_size=HEAD_LIMIT_BYTES,
        **options,
    )


def serve(app: ASGIApp, host: str, port: int, *, parser: str = "h11", **options: Any) -> None:
    """Serve `app` with `server_config` until the process is told to stop."""
    uvicorn.Server(server_config(app, host, port, parser=parser, **options)).run()
