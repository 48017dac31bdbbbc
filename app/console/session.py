"""Who is signed in to the console, and proof that a form came from the console itself.

Sign-in exchanges the admin token (RECON_ADMIN_TOKEN, the same that guards the JSON API) and a
name for a session cookie: the token proves the right to operate, the name is what the audit
trail records, because one shared token cannot say who acted. The cookie carries the session's
random secret, signed with a key derived from the admin token (so rotating the token signs
everyone out); the session itself lives in the store (reconciliation.operator.console_sessions),
so sign-out, the idle timeout and `recon console sessions end-all` end it in every web process
at once, and a copied cookie dies with it. The cookie is HttpOnly, SameSite=Strict, limited to
/console, and Secure when RECON_PUBLIC_URL is https.

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
from dataclasses import dataclass, replace
from typing import Any, Final

import anyio.to_thread
from litestar.connection import ASGIConnection, Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from sqlalchemy.orm import Session, sessionmaker

from app import state_keys
from app.auth import ADMIN_TOKEN_STATE_KEY
from foundation import Secret
from reconciliation.operator import SessionRules, live_operator
from reconciliation.store import transaction

#: The session cookie's name.
SESSION_COOKIE: Final = "recon_console"
#: The sign-in form's double-submit cookie.
SIGN_IN_COOKIE: Final = "recon_console_signin"
#: Every console cookie is sent back only to the console's own paths.
COOKIE_PATH: Final = "/console"
#: Where create_app puts the SessionRules (absolute and idle limits) in `app.state`.
RULES_STATE_KEY: Final = "console_session_rules"
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
    """The signed-in person: their name, the session's secret (its nonce), when the cookie
    ends (the store may end the session sooner)."""

    name: str
    nonce: str
    expires: int


def signing_key(admin_token: Secret) -> bytes:
    """The cookie key: derived from the admin token, never the token itself."""
    return hmac.new(admin_token.reveal().encode(), b"recon console session v1", "sha256").digest()


def _sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def issue(
    key: bytes, name: str, lifetime_seconds: int, *, now: float | None = None
) -> tuple[Operator, str]:
    """A new session for `name` with a fresh random secret, and its cookie value."""
    operator = Operator(
        name=name,
        nonce=secrets.token_urlsafe(32),
        expires=int((now or time.time()) + lifetime_seconds),
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


def key_of(connection: ASGIConnection[Any, Any, Any, Any]) -> bytes:
    token: Secret = connection.app.state[ADMIN_TOKEN_STATE_KEY]
    return signing_key(token)


def rules_of(connection: ASGIConnection[Any, Any, Any, Any]) -> SessionRules:
    found: SessionRules = connection.app.state[RULES_STATE_KEY]
    return found


async def live_in_store(
    connection: ASGIConnection[Any, Any, Any, Any], operator: Operator
) -> Operator | None:
    """`operator` as the store knows it (its name from the session row), or None when the
    session was ended, idled out or is past its absolute end."""
    factory: sessionmaker[Session] = connection.app.state[state_keys.SESSION_FACTORY]
    rules = rules_of(connection)

    def look_up() -> str | None:
        with transaction(factory) as session:
            return live_operator(session, operator.nonce, rules)

    name = await anyio.to_thread.run_sync(look_up)
    return None if name is None else replace(operator, name=name)


async def console_guard(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """Signed in, and (for a POST) the form's CSRF token is this session's.

    Unsigned requests get 401, which the console's exception handler turns into a redirect to
    the sign-in page; a missing or wrong CSRF token gets 403 and changes nothing.
    """
    key = key_of(connection)
    operator = read(key, connection.cookies.get(SESSION_COOKIE))
    if operator is not None:
        operator = await live_in_store(connection, operator)
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
