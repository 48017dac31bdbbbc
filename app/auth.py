"""The admin guard: `Authorization: Bearer <RECON_ADMIN_TOKEN>` on the inbox, reports and alerts.

Exported for the other route modules (`app.reporting_routes`) so every operator endpoint is
guarded the same way. The token is compared in constant time and never echoed.
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler

from foundation.secret import Secret

#: Where create_app puts the token in `app.state`.
ADMIN_TOKEN_STATE_KEY = "admin_token"


def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Let the request through only with the admin bearer token; 401 otherwise."""
    expected: Secret = connection.app.state[ADMIN_TOKEN_STATE_KEY]
    scheme, _sep, token = connection.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        token.strip().encode(), expected.reveal().encode()
    ):
        raise NotAuthorizedException(
            detail="missing or wrong admin token: send Authorization: Bearer <RECON_ADMIN_TOKEN>"
        )
