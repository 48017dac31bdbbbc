"""A 429 storm lowers the gateway rate for every worker, honouring Retry-After; it climbs back.

Two "worker processes" (their own limiters and transports, one Redis) talk to the sandbox over
HTTP; the sandbox answers 429 with a Retry-After. The rate's clock is the wall clock plus an
offset the test moves, so a storm over several seconds and the climb back over minutes take
no real time; the Retry-After pause is waited for really.
"""

from __future__ import annotations

import time

import httpx
import pytest
import redis

from sandbox.faults import Fault
from sandbox.server import SandboxServer
from workers import REGISTRY
from workers.gateway_rate import CLIMB_SECONDS, FLOOR_SHARE, STATE_KEY
from workers.gateway_rate_limit import GatewayLimiter, RateLimitedTransport, build_limiter

CONFIGURED = 40.0
ROUTE = "GET /v1/environment"


def _gauge() -> float | None:
    return REGISTRY.get_sample_value("recon_worker_gateway_rate_per_second")


@pytest.mark.redis
def test_a_429_storm_lowers_the_shared_rate_and_it_recovers(
    redis_url: str, sandbox: SandboxServer
) -> None:
    redis.Redis.from_url(redis_url).delete(STATE_KEY)
    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]

    limiters: list[GatewayLimiter] = [
        build_limiter(redis_url, CONFIGURED, clock=clock) for _ in range(2)
    ]
    clients = [
        httpx.Client(
            transport=RateLimitedTransport(httpx.HTTPTransport(), limiter),
            base_url=sandbox.base_url,
            headers={"Authorization": "Bearer ak_test_recon"},
        )
        for limiter in limiters
    ]
    try:
        sandbox.state.faults.add_route(
            Fault(target=ROUTE, kind="rate_limit_429", count=1, seconds=1)
        )
        assert clients[0].get("/v1/environment").status_code == 429
        rate, paused = limiters[1].current()  # the other worker slows down too
        assert rate == CONFIGURED / 2 and 0 < paused <= 1.0
        assert _gauge() == CONFIGURED / 2
        started = time.monotonic()
        assert clients[1].get("/v1/environment").status_code == 200
        assert time.monotonic() - started >= 0.8  # not sent before Retry-After had passed

        for _ in range(6):  # the storm goes on, a second apart
            offset[0] += 1.5
            sandbox.state.faults.add_route(
                Fault(target=ROUTE, kind="rate_limit_429", count=1, seconds=0)
            )
            assert clients[1].get("/v1/environment").status_code == 429
        assert limiters[0].current()[0] == FLOOR_SHARE * CONFIGURED  # slowed, never stopped

        offset[0] += 3 * CLIMB_SECONDS  # a while without a 429: climbing
        climbing = limiters[0].current()[0]
        assert FLOOR_SHARE * CONFIGURED < climbing < CONFIGURED
        offset[0] += 20 * CLIMB_SECONDS
        assert limiters[0].current()[0] == CONFIGURED  # recovered
        assert clients[0].get("/v1/environment").status_code == 200
        assert _gauge() == CONFIGURED
    finally:
        for client in clients:
            client.close()
        redis.Redis.from_url(redis_url).delete(STATE_KEY)
