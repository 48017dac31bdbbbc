"""Litestar, with the webhook receiver's exact path taken before the framework's request path.

The receiver is a raw ASGI route registered in the app like any other (it is listed, guarded
by nothing, documented in docs/decisions.md); this subclass only makes its dispatch direct.
Routing, the exception middleware and the send wrappers would cost about as much as the
receiver's own work (docs/decisions.md, "Figures behind the code's choices"), and the receiver
does its own error handling, correlation id and responses. Every other path, and lifespan, go
through Litestar unchanged.
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import ASGIApp

from app.response_headers import with_security_headers


class ReceiverFirstLitestar(Litestar):
    """A Litestar app that hands one exact path straight to its ASGI callable."""

    def __init__(self, *, receiver_path: str, receiver: ASGIApp, **options: Any) -> None:
        super().__init__(**options)
        self._receiver_path = receiver_path
        self._receiver = receiver

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Dispatch the receiver's path directly; everything else as Litestar does, with the
        security headers of app.response_headers on every answer."""
        if scope["type"] == ScopeType.HTTP:
            if scope["path"] == self._receiver_path:
                await self._receiver(scope, receive, send)
                return
            send = with_security_headers(send, scope["path"])
        await super().__call__(scope, receive, send)
