"""Who is signed in to the console, and proof that a form came from the console itself.

Sign-in exchanges the admin token (RECON_ADMIN_TOKEN, the same that guards the JSON API) and a
name for a session cookie: the token proves the right to operate, the name is what the audit
trail records, because one shared token cannot say who acted. The cookie is signed with a key
derived from the admin token, so rotating the token signs everyone out and the server keeps no
session table. It is HttpOnly, SameSite=Strict, limited to /console, and Secure when
RECON_PUBLIC_URL is https.

CSRF: every form carries a token derived from the session's own random nonce (a synchronizer
token), checked by the guard on every POST before the handler runs. The sign-in form, which
has no session yet, uses a double-submit token: a random cookie and the same value in the form.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final

from litestar.connection import ASGIConnection, Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from app.auth import ADMIN_TOKEN_STATE_KEY
from foundation.secret import Secret

#: The session cookie's name.
SESSION_COOKIE: Final = "recon_console"
#: The sign-in form's double-submit cookie.
SIGN_IN_COOKIE: Final = "recon_console_signin"
#: Every console cookie is sent back only to the console's own paths.
COOKIE_PATH: Final = "/console"
#: How long a sign-in lasts: a working day, so a forgotten browser does not stay signed in.
SESSION_SECONDS: Final = 12 * 3600
#: The form field that carries the CSRF token.
CSRF_FIELD: Final = "csrf_token"
#: Where the guard leaves the signed-in operator for the handlers (`request.state`).
OPERATOR_STATE_KEY: Final = "console_operator"
#: Longest name kept (the audit trail's and the alerts' actor columns are VARCHAR(128)).
NAME_MAX: Final = 128
#: Methods that change nothing and so need no CSRF token.
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class Operator:
    """The signed-in person: their name, the session's nonce, when the session ends."""

    name: str
    nonce: str
    expires: int


def signing_key(admin_token: Secret) -> bytes:
    """The cookie key: derived from the admin token, never the token itself."""
    return hmac.new(admin_token.reveal().encode(), b"recon console session v1", "sha256").digest()


def _sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def issue(key: bytes, name: str, *, now: float | None = None) -> tuple[Operator, str]:
    """A new session for `name`, and its cookie value."""
    operator = Operator(
        name=name,
        nonce=secrets.token_urlsafe(16),
        expires=int((now or time.time()) + SESSION_SECONDS),
    )
    body = json.dumps({"n": operator.name, "s": operator.nonce, "e": operator.expires}).encode()
    payload = base64.urlsafe_b64encode(body)
    return operator, f"{payload.decode()}.{_sign(key, payload)}"


def read(key: bytes, cookie: str | None, *, now: float | None = None) -> Operator | None:
    """The operator of a cookie, or None when it is missing, forged or expired."""
    if not cookie or "." not in cookie:
        return None
    payload_text, _, signature = cookie.rpartition(".")
    payload = payload_text.encode()
    if not hmac.compare_digest(_sign(key, payload), signature):
        return None
    try:
        fields = json.loads(base64.urlsafe_b64decode(payload))
        operator = Operator(str(fields["n"]), str(fields["s"]), int(fields["e"]))
    except (ValueError, KeyError, TypeError):
        return None
    return operator if operator.expires > (now or time.time()) else None


def csrf_token(key: bytes, operator: Operator) -> str:
    """The token every form of this session carries."""
    return _sign(key, b"csrf:" + operator.nonce.encode())


def check_admin_token(admin_token: Secret, offered: str) -> bool:
    """The sign-in check, in constant time."""
    return hmac.compare_digest(offered.strip().encode(), admin_token.reveal().encode())


def key_of(connection: ASGIConnection[Any, Any, Any, Any]) -> bytes:
    token: Secret = connection.app.state[ADMIN_TOKEN_STATE_KEY]
    return signing_key(token)


async def console_guard(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """Signed in, and (for a POST) the form's CSRF token is this session's.

    Unsigned requests get 401, which the console's exception handler turns into a redirect to
    the sign-in page; a missing or wrong CSRF token gets 403 and changes nothing.
    """
    key = key_of(connection)
    operator = read(key, connection.cookies.get(SESSION_COOKIE))
    if operator is None:
        raise NotAuthorizedException(detail="sign in to the console first")
    if connection.scope.get("method", "GET") not in SAFE_METHODS:
        offered = ""
        if isinstance(connection, Request):
            offered = str((await connection.form()).get(CSRF_FIELD) or "")
        if not offered or not hmac.compare_digest(offered, csrf_token(key, operator)):
            raise PermissionDeniedException(
                detail="this form's CSRF token is missing or stale: reload the page and try again"
            )
    connection.state[OPERATOR_STATE_KEY] = operator
