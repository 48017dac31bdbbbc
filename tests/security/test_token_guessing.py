"""Guessing the admin token, slowed and seen: per-client limits on console sign-in and on the
API's bearer check, shared by every web process through Redis, one log line per client per
minute, a Prometheus counter.

Before: 300 wrong console sign-ins in 0.4 s and 2,000 wrong API tokens in 1.0 s, all 401,
nothing logged, nothing counted. Then (third wave): with Redis, 28 simultaneous wrong tokens got
25 answers of 401 against a budget of 10 (checked, then counted); behind a local proxy that
passes X-Forwarded-For through, each guess carried a new address and a new budget. A client's
window now starts at its first try, so no test waits for a minute boundary; the window's end is
shown by moving the limiter's clock.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from app.auth_limits import AuthFailureLimiter
from tests.integration.app.receiver_helpers import ADMIN, ADMIN_TOKEN, free_port
from tests.integration.workers.private_redis import PrivateRedis
from tests.security.conftest import WebProcess
from tests.security.console_client import sign_in

#: The default budget of wrong tokens per client per minute (RECON_AUTH_FAILURES_PER_MINUTE).
LIMIT = 10
WRONG = {"Authorization": "Bearer not-the-admin-token-0000000000"}


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
    half = LIMIT // 2
    for web in (first, second):
        for _ in range(half):
            assert httpx.get(f"{web.base}/deliveries", headers=WRONG, timeout=30).status_code == 401
    # Ten wrong tokens over two processes: the budget is spent in both.
    for web in (first, second):
        _assert_limited(httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30))


@pytest.mark.redis
def test_simultaneous_wrong_tokens_get_no_more_than_the_budget_through_redis(
    security_env: dict[str, str],
    web_process: Callable[..., WebProcess],
    private_redis: PrivateRedis,
) -> None:
    web = web_process({**security_env, "REDIS_URL": private_redis.url}, "--no-workers")
    with httpx.Client(base_url=web.base, timeout=60) as client:
        client.get("/health")  # one connection made before the burst, as a warm-up

        def guess(_: int) -> int:
            return httpx.get(f"{web.base}/deliveries", headers=WRONG, timeout=60).status_code

        with ThreadPoolExecutor(28) as pool:
            codes = list(pool.map(guess, range(28)))
    assert codes.count(401) == LIMIT, codes
    assert codes.count(429) == 28 - LIMIT, codes


def test_a_new_forwarded_address_per_guess_still_spends_the_proxy_s_budget(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    """The process's peer is 127.0.0.1, a trusted proxy by default, which here passes each
    request's own X-Forwarded-For through."""
    web = web_process(security_env, "--no-workers")
    with httpx.Client(base_url=web.base, timeout=30) as client:
        codes = [
            client.get(
                "/deliveries", headers={**WRONG, "X-Forwarded-For": f"203.0.113.{n}"}
            ).status_code
            for n in range(40)
        ]
    assert codes[:LIMIT] == [401] * LIMIT, codes
    assert codes[LIMIT:] == [429] * (40 - LIMIT), codes
    lines = _refusal_lines(web)
    assert lines and lines[0]["client"] == "203.0.113.0", lines
    # A peer no setting trusts is its own client, whatever header it sends.
    untrusting = web_process({**security_env, "RECON_TRUSTED_PROXIES": "none"}, "--no-workers")
    forged = {**WRONG, "X-Forwarded-For": "198.51.100.1"}
    assert httpx.get(f"{untrusting.base}/deliveries", headers=forged, timeout=30).status_code == 401
    [line] = _refusal_lines(untrusting)
    assert line["client"] == "127.0.0.1", line


class _Clock:
    """The limiter's clock, moved by the test instead of waiting."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("store", ["process", "redis"])
def test_a_client_s_window_ends_a_minute_after_its_first_try(
    request: pytest.FixtureRequest, store: str
) -> None:
    redis_url = request.getfixturevalue("private_redis").url if store == "redis" else None
    clock = _Clock()
    limiter = AuthFailureLimiter(LIMIT, redis_url, clock=clock)

    async def scenario() -> None:
        try:
            for _ in range(LIMIT):
                attempt = await limiter.attempt(["198.51.100.7"])
                assert attempt.retry_after is None
                limiter.refused(attempt, "api")
            clock.now += 30
            over = await limiter.attempt(["198.51.100.7"])
            assert over.retry_after == 30, over
            # A right token within the budget gives its place back.
            other = await limiter.attempt(["198.51.100.8"])
            await limiter.accepted(other)
            assert (await limiter.attempt(["198.51.100.8"])).counts == (1,)
            clock.now += 30
            assert (await limiter.attempt(["198.51.100.7"])).retry_after is None
            assert await limiter.retry_after(["198.51.100.7"]) is None
        finally:
            await limiter.close()

    asyncio.run(scenario())


def test_with_redis_unreachable_the_process_counts_on_its_own() -> None:
    """Redis down must neither let every guess through nor lock everyone out: the budget is
    kept in the process, and Redis is not asked again (a timeout each) until the window ends."""
    clock = _Clock()
    limiter = AuthFailureLimiter(LIMIT, f"redis://127.0.0.1:{free_port()}/0", clock=clock)

    async def scenario() -> None:
        try:
            for _ in range(LIMIT):
                attempt = await limiter.attempt(["198.51.100.9"])
                assert attempt.retry_after is None
                limiter.refused(attempt, "api")
            assert (await limiter.attempt(["198.51.100.9"])).retry_after == 60
        finally:
            await limiter.close()

    asyncio.run(scenario())
