"""The admin guard: `Authorization: Bearer <RECON_ADMIN_TOKEN>` on the inbox, reports and alerts.

Exported for the other route modules (`app.reporting_routes`) so every operator endpoint is
guarded the same way. The token is compared in constant time and never echoed. Wrong tokens
are counted per client (app.auth_limits): past the limit a client hears 429 with Retry-After.
"""

from __future__ import annotations

import hmac
from typing import Any, Final, NoReturn

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, TooManyRequestsException
from litestar.handlers.base import BaseRouteHandler

from app import metrics
from app.auth_limits import AuthFailureLimiter
from app.client_addresses import client_addresses
from foundation import Secret

#: Where create_app puts the token in `app.state`.
ADMIN_TOKEN_STATE_KEY: Final = "admin_token"
#: Where create_app puts the AuthFailureLimiter in `app.state`.
AUTH_LIMITER_STATE_KEY: Final = "auth_failure_limiter"


def limiter_of(connection: ASGIConnection[Any, Any, Any, Any]) -> AuthFailureLimiter:
    found: AuthFailureLimiter = connection.app.state[AUTH_LIMITER_STATE_KEY]
    return found


def token_matches(expected: Secret, offered: str) -> bool:
    """The check of an offered admin token, in constant time."""
    return hmac.compare_digest(offered.strip().encode(), expected.reveal().encode())


async def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Let the request through only with the admin bearer token; 401 otherwise, 429 once the
    client sent too many wrong tokens this minute."""
    limiter = limiter_of(connection)
    clients = client_addresses(connection)
    expected: Secret = connection.app.state[ADMIN_TOKEN_STATE_KEY]
    scheme, _sep, token = connection.headers.get("authorization", "").partition(" ")
    if not token:
        # A try without any token guesses nothing: it is not counted, only held to the limit.
        wait = await limiter.retry_after(clients)
        if wait is not None:
            _limited(wait)
        raise NotAuthorizedException(detail=MISSING_OR_WRONG)
    attempt = await limiter.attempt(clients)
    if attempt.retry_after is not None:
        _limited(attempt.retry_after)
    if scheme.lower() != "bearer" or not token_matches(expected, token):
        limiter.refused(attempt, "api")
        raise NotAuthorizedException(detail=MISSING_OR_WRONG)
    await limiter.accepted(attempt)


#: The 401's words: how to send the token, never how close a guess came.
MISSING_OR_WRONG: Final = (
    "missing or wrong admin token: send Authorization: Bearer <RECON_ADMIN_TOKEN>"
)


def _limited(wait: int) -> NoReturn:
    metrics.ADMIN_TOKEN_LIMITED.labels("api").inc()
    raise TooManyRequestsException(
        detail=f"too many wrong admin tokens from this client: retry in {wait} s",
        headers={"Retry-After": str(wait)},
    )
