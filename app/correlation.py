"""A correlation id on every request: the caller's X-Request-Id, or a new one.

Bound into structlog's context so every line the request logs carries it, and echoed in the
response so a caller can quote it. A caller-supplied id is used only if it is short and plain:
it lands in logs, so it must not be able to forge log lines.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from typing import Final

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from foundation import bind_correlation_id

#: Header carrying the correlation id in both directions.
REQUEST_ID_HEADER: Final = b"x-request-id"
_ACCEPTABLE_ID: Final = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
#: Generated ids: a random prefix per process and a counter, unique across a fleet and much
#: cheaper than a UUID on every request.
_PREFIX: Final = os.urandom(6).hex()
_counter = itertools.count(1)


def request_id(supplied: bytes | None) -> bytes:
    """The caller's id if it is short and plain, else a new one."""
    if supplied is not None and _ACCEPTABLE_ID.fullmatch(supplied):
        return supplied
    return f"{_PREFIX}-{next(_counter):x}".encode()


def correlation_middleware(*, bypass: frozenset[str] = frozenset()) -> Callable[[ASGIApp], ASGIApp]:
    """Litestar middleware factory: bind and echo the correlation id of each HTTP request.

    Paths in `bypass` handle the id themselves (the webhook receiver does, binding it only when
    it has something to log: a wrapper on every send would cost more than that).
    """

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or scope["path"] in bypass:
                await app(scope, receive, send)
                return
            raw = request_id(next((v for k, v in scope["headers"] if k == REQUEST_ID_HEADER), None))
            bind_correlation_id(raw.decode("ascii"))

            async def send_with_id(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", ()), (REQUEST_ID_HEADER, raw)]
                await send(message)

            await app(scope, receive, send_with_id)

        return middleware

    return factory
