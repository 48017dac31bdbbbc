"""Guessing the admin token, slowed and seen: per-client limits on console sign-in and on the
API's bearer check, shared by every web process through Redis, one log line per client per
minute, a Prometheus counter.

Before: 300 wrong console sign-ins in 0.4 s and 2,000 wrong API tokens in 1.0 s, all 401,
nothing logged, nothing counted.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN, ADMIN_TOKEN
from tests.integration.workers.private_redis import PrivateRedis
from tests.security.conftest import WebProcess
from tests.security.console_client import sign_in

#: The default budget of wrong tokens per client per minute (RECON_AUTH_FAILURES_PER_MINUTE).
LIMIT = 10
WRONG = {"Authorization": "Bearer not-the-admin-token-0000000000"}


def _clear_of_a_minute_boundary() -> None:
    """Start a burst early in a minute, so the counting window does not turn over during it
    (the burst then sees one window, which is what the assertions describe)."""
    into = time.time() % 60
    if into > 40:
        time.sleep(60 - into + 0.5)


def _refusal_lines(web: WebProcess) -> list[dict[str, object]]:
    return [json.loads(line) for line in web.log_text().splitlines() if '"auth.refused"' in line]


def _metric(web: WebProcess, name: str, surface: str) -> float:
    text = httpx.get(f"{web.base}/metrics", timeout=30).text
    found = re.search(rf'^{name}_total{{surface="{surface}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def _assert_limited(answer: httpx.Response) -> None:
    assert answer.status_code == 429, (answer.status_code, answer.text[:300])
    assert 1 <= int(answer.headers["retry-after"]) <= 60


def test_wrong_api_tokens_past_the_limit_get_429_one_log_line_and_a_counter(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    _clear_of_a_minute_boundary()
    with httpx.Client(base_url=web.base, timeout=30) as client:
        answers = [client.get("/deliveries", headers=WRONG) for _ in range(300)]
        assert [a.status_code for a in answers[:LIMIT]] == [401] * LIMIT
        for answer in answers[LIMIT:]:
            _assert_limited(answer)
        # The right token too, from this client, until the minute is over: otherwise the
        # answer to a guess would still tell whether it was right.
        _assert_limited(client.get("/deliveries", headers=ADMIN))
        # The console's sign-in is the same budget: it is the same token.
        _assert_limited(sign_in(client))
    lines = _refusal_lines(web)
    assert len(lines) == 1, lines
    assert lines[0]["client"] == "127.0.0.1" and lines[0]["surface"] == "api"
    assert ADMIN_TOKEN not in web.log_text() and "not-the-admin-token" not in web.log_text()
    assert _metric(web, "recon_admin_token_refusals", "api") == LIMIT
    assert _metric(web, "recon_admin_token_limited", "api") == 300 - LIMIT + 1
    # A request without any token guesses nothing and is not counted.
    assert httpx.get(f"{web.base}/alerts", timeout=30).status_code in (401, 429)


def test_wrong_console_sign_ins_past_the_limit_get_429(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    _clear_of_a_minute_boundary()
    with httpx.Client(base_url=web.base, timeout=30) as client:
        wrong = [sign_in(client, token="guess-" + str(n)) for n in range(LIMIT + 20)]
        assert [a.status_code for a in wrong[:LIMIT]] == [401] * LIMIT
        for answer in wrong[LIMIT:]:
            _assert_limited(answer)
            assert "Too many wrong tokens" in answer.text
        right = sign_in(client)
        _assert_limited(right)
        assert "recon_console=" not in right.headers.get("set-cookie", "")
    lines = _refusal_lines(web)
    assert len(lines) == 1 and lines[0]["surface"] == "console", lines
    assert _metric(web, "recon_admin_token_refusals", "console") == LIMIT
    assert _metric(web, "recon_admin_token_limited", "console") == 21


@pytest.mark.redis
def test_the_budget_is_shared_by_every_web_process_through_redis(
    security_env: dict[str, str],
    web_process: Callable[..., WebProcess],
    private_redis: PrivateRedis,
) -> None:
    env = {**security_env, "REDIS_URL": private_redis.url}
    first, second = web_process(env, "--no-workers"), web_process(env, "--no-workers")
    _clear_of_a_minute_boundary()
    half = LIMIT // 2
    for web in (first, second):
        for _ in range(half):
            assert httpx.get(f"{web.base}/deliveries", headers=WRONG, timeout=30).status_code == 401
    # Ten wrong tokens over two processes: the budget is spent in both.
    for web in (first, second):
        _assert_limited(httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30))
