"""Console sessions that end: at sign-out, after idling, all at once, in every web process.

Before: sign-out only deleted the cookie and the server kept no session, so a copied cookie
kept working for up to 12 hours (POSTs included); there was no idle timeout, and no way to end
a session but rotating the admin token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from app.console.session import SESSION_COOKIE
from reconciliation.alerts.lifecycle import raise_alert
from reconciliation.store.db import make_engine, make_session_factory, transaction
from reconciliation.store.models import Alert, AuditEvent, ConsoleSession
from tests.security.conftest import WebProcess, run_recon
from tests.security.console_client import csrf_of, sign_in, signed_in_client


def _copy_of(client: httpx.Client, base: str) -> httpx.Client:
    """A second browser holding a copy of the first one's session cookie."""
    cookie = client.cookies.get(SESSION_COOKIE, path="/console")
    assert cookie
    thief = httpx.Client(base_url=base, timeout=30)
    thief.cookies.set(SESSION_COOKIE, cookie, path="/console")
    return thief


def _signed_in(client: httpx.Client) -> bool:
    answer = client.get("/console")
    if answer.status_code == 303:
        assert answer.headers["location"].startswith("/console/sign-in")
        return False
    assert answer.status_code == 200, answer.text[:300]
    return True


def _open_alert(db_url: str) -> int:
    engine = make_engine(db_url)
    try:
        with transaction(make_session_factory(engine)) as session:
            return raise_alert(
                session,
                kind="amount_mismatch",
                severity="high",
                subject="session test",
                fingerprint="session-test",
                evidence={},
            ).id
    finally:
        engine.dispose()


def _alert_state(db_url: str, alert_id: int) -> str:
    engine = make_engine(db_url)
    try:
        with make_session_factory(engine)() as session:
            return session.get_one(Alert, alert_id).state
    finally:
        engine.dispose()


def test_a_copied_cookie_dies_at_sign_out_posts_included(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    alert_id = _open_alert(security_env["DATABASE_URL"])
    with signed_in_client(web.base) as owner, _copy_of(owner, web.base) as thief:
        stolen_csrf = csrf_of(thief)  # the copy works while the session lives
        assert (
            owner.post("/console/sign-out", data={"csrf_token": csrf_of(owner)}).status_code == 303
        )
        assert not _signed_in(thief)
        answer = thief.post(
            f"/console/alerts/{alert_id}/acknowledge",
            data={"csrf_token": stolen_csrf, "comment": "mine now", "here": "/console"},
        )
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/console/sign-in")
    assert _alert_state(security_env["DATABASE_URL"], alert_id) == "open"


def _age_sessions(db_url: str, seconds: float) -> None:
    """Every console session's last request `seconds` earlier: the sessions' clock, moved."""
    engine = make_engine(db_url)
    try:
        with transaction(make_session_factory(engine)) as session:
            for row in session.scalars(select(ConsoleSession)):
                row.last_seen_at -= timedelta(seconds=seconds)
    finally:
        engine.dispose()


def test_an_idle_session_ends_while_a_busy_one_lives_on(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process({**security_env, "RECON_CONSOLE_IDLE_SECONDS": "4"})
    store = security_env["DATABASE_URL"]
    with signed_in_client(web.base, "Idle") as idle, signed_in_client(web.base, "Busy") as busy:
        # Time passes for both sessions (their last-seen moves back), Busy asks in between,
        # Idle asks nothing: 6 s without a request is past the 4 s, 3 s is not.
        _age_sessions(store, 3)
        assert _signed_in(busy)
        _age_sessions(store, 3)
        assert _signed_in(busy)
        assert not _signed_in(idle)
        # Once over, a session stays over: the next request does not revive it.
        assert not _signed_in(idle)


def test_end_all_signs_everyone_out_at_once(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    with signed_in_client(web.base, "Ada") as ada, signed_in_client(web.base, "Bo") as bo:
        assert _signed_in(ada) and _signed_in(bo)
        listed = run_recon(security_env, "console", "sessions", "list")
        assert "2 console session(s) signed in" in listed.stdout, listed.stderr
        ended = run_recon(security_env, "console", "sessions", "end-all", "--by", "oncall")
        assert ended.returncode == 0, ended.stderr
        assert "ended 2 console session(s)" in ended.stdout
        assert not _signed_in(ada) and not _signed_in(bo)
        # Signing in again works as before.
        assert sign_in(ada, "Ada").status_code == 303 and _signed_in(ada)
    engine = make_engine(security_env["DATABASE_URL"])
    with make_session_factory(engine)() as session:
        actions = [(e.actor, e.action) for e in session.query(AuditEvent).order_by(AuditEvent.id)]
    engine.dispose()
    assert ("oncall", "ended every console session") in actions


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_second_web_process_sees_a_session_ended_by_the_first(
    security_env: dict[str, str], db_url: str, web_process: Callable[..., WebProcess]
) -> None:
    env = {
        **security_env,
        "DATABASE_URL": db_url,
        "RECON_SECRET_KEY": Fernet.generate_key().decode(),
    }
    first, second = web_process(env), web_process(env)
    with signed_in_client(first.base) as at_first, _copy_of(at_first, second.base) as at_second:
        # One session, served by either process (a load balancer may send a browser to both).
        assert _signed_in(at_first) and _signed_in(at_second)
        signed_out = at_first.post("/console/sign-out", data={"csrf_token": csrf_of(at_first)})
        assert signed_out.status_code == 303
        # Ended by the first process: the second refuses it on its very next request.
        assert not _signed_in(at_second)
        assert re.search(r"sign-in", at_second.get("/console/alerts").headers["location"])


def test_an_upper_case_https_public_url_still_gives_secure_cookies(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    """Before: `RECON_PUBLIC_URL=HTTPS://...` passed the URL check (schemes have no case) but
    not the cookie's `startswith("https://")`, so session cookies went without `Secure`."""
    env = {**security_env, "RECON_PUBLIC_URL": "HTTPS://recon.example.com"}
    web = web_process(env, "--no-workers")
    form = httpx.get(f"{web.base}/console/sign-in", timeout=30)
    assert form.status_code == 200, form.text[:300]
    cookies = form.headers.get_list("set-cookie")
    assert cookies and all("secure" in c.lower() for c in cookies), cookies
