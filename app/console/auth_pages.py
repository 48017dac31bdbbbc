"""Sign-in and sign-out of the console (see app.console.session for the cookie and CSRF).

Sign-in opens a session in the store, sign-out ends it there; wrong admin tokens count against
the client (app.auth_limits), and past the limit the form answers 429 with Retry-After.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

import anyio.to_thread
from litestar import Controller, Request, get, post
from litestar.datastructures import Cookie
from litestar.response import Redirect, Template

import app.console.session as console_session
from app import metrics
from app.auth import ADMIN_TOKEN_STATE_KEY, limiter_of, token_matches
from app.client_addresses import client_addresses
from app.console.rendering import operator, service
from reconciliation.operator import actions as operator_actions

AnyRequest = Request[Any, Any, Any]


def _secure(request: AnyRequest) -> bool:
    return bool(request.route_handler.opt.get("secure_cookies", False))


def _cookie(request: AnyRequest, name: str, value: str, max_age: int) -> Cookie:
    return Cookie(
        key=name,
        value=value,
        path=console_session.COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
        max_age=max_age,
    )


def _form_page(
    request: AnyRequest,
    error: str | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Template:
    token = secrets.token_urlsafe(24)
    return Template(
        template_name="sign_in.html",
        context={"signin_token": token, "error": error, "next": request.query_params.get("next")},
        cookies=[_cookie(request, console_session.SIGN_IN_COOKIE, token, 3600)],
        status_code=status,
        headers=headers,
    )


class SignInController(Controller):
    """The only console pages open without a session."""

    path = "/"

    @get("/sign-in", sync_to_thread=False)
    def sign_in_form(self, request: AnyRequest) -> Template:
        """The form: a name for the audit trail, and the admin token."""
        return _form_page(request)

    @post("/sign-in", status_code=303)
    async def sign_in(self, request: AnyRequest) -> Template | Redirect:
        """Exchange the admin token for a session cookie; refuse with the form again."""
        form = await request.form()
        expected = request.cookies.get(console_session.SIGN_IN_COOKIE, "")
        offered = str(form.get(console_session.CSRF_FIELD) or "")
        if not expected or not hmac.compare_digest(expected, offered):
            return _form_page(request, "The sign-in form expired: please try again.", 403)
        name = str(form.get("name") or "").strip()
        if not name or len(name) > console_session.NAME_MAX or "\x00" in name:
            return _form_page(
                request,
                "Give your name (up to 128 characters, no NUL): it goes in the audit trail.",
                400,
            )
        limiter = limiter_of(request)
        # Counted before the token is compared (app.auth_limits): a burst of simultaneous
        # guesses gets no more comparisons than the budget.
        attempt = await limiter.attempt(client_addresses(request))
        wait = attempt.retry_after
        if wait is not None:
            metrics.ADMIN_TOKEN_LIMITED.labels("console").inc()
            return _form_page(
                request,
                f"Too many wrong tokens from here: try again in {wait} seconds.",
                429,
                {"Retry-After": str(wait)},
            )
        if not token_matches(
            request.app.state[ADMIN_TOKEN_STATE_KEY], str(form.get("token") or "")
        ):
            limiter.refused(attempt, "console")
            return _form_page(request, "That is not the admin token.", 401)
        await limiter.accepted(attempt)
        key = console_session.key_of(request)
        rules = console_session.rules_of(request)
        signed, cookie = console_session.issue(key, name, rules.absolute_seconds)

        acting = service(request, name)
        await anyio.to_thread.run_sync(
            acting.perform, operator_actions.sign_in, signed.nonce, rules
        )
        target = str(form.get("next") or "")
        response = Redirect(
            path=target if target.startswith("/console") else "/console", status_code=303
        )
        response.set_cookie(
            _cookie(request, console_session.SESSION_COOKIE, cookie, rules.absolute_seconds)
        )
        response.delete_cookie(console_session.SIGN_IN_COOKIE, path=console_session.COOKIE_PATH)
        return response


class SignOutController(Controller):
    """Sign-out: behind the guard, so it needs the session and its CSRF token."""

    path = "/"
    guards = [console_session.console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @post("/sign-out", status_code=303)
    async def sign_out(self, request: AnyRequest) -> Redirect:
        """End the session in the store (a copy of the cookie dies with it), forget the cookie,
        record who left."""
        secret = operator(request).nonce
        await anyio.to_thread.run_sync(service(request).perform, operator_actions.sign_out, secret)
        response = Redirect(path="/console/sign-in", status_code=303)
        response.delete_cookie(console_session.SESSION_COOKIE, path=console_session.COOKIE_PATH)
        return response
