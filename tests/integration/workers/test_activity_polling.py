"""poll_activity's reader against the sandbox over HTTP, into SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

import httpx
import pytest

from foundation import Settings
from sandbox.bulk import build_bulk
from sandbox.faults import Fault
from sandbox.server import SandboxServer
from tests.integration.workers.ledger_compare import assert_store_matches
from tests.integration.workers.sandbox_probe import RequestProbe
from workers import Runtime, build_runtime, release_runtime
from workers.actors.activity import read_activity
from workers.actors.holdings import discover

PAGE = 50  # RECON_ACTIVITY_PAGE_SIZE in worker_env


def catch_up(rt: Runtime, holding_ids: list[int], page_budget: int = 1000) -> int:
    """Read every holding until caught up; returns how many messages that took."""
    messages = 0
    pending = list(holding_ids)
    while pending:
        holding = pending.pop(0)
        messages += 1
        assert messages < 10_000, "catch-up does not converge"
        result = read_activity(rt, holding, page_budget=page_budget)
        if not result.caught_up:
            pending.append(holding)
    return messages


def test_catch_up_stores_every_posting_once_with_the_fewest_requests(
    runtime: Runtime, sandbox: SandboxServer, probe: RequestProbe
) -> None:
    sizes = [0, 49, 50, 237]
    for size in sizes:
        build_bulk(sandbox.state, holdings=1, postings=size, seed=size + 1)
    new = discover(runtime).new_holdings
    before = probe.count("GET /v1/balances/activity")
    # A small page budget: the catch-up is cut into several messages, each resuming.
    catch_up(runtime, new, page_budget=2)
    requests = probe.count("GET /v1/balances/activity") - before
    assert assert_store_matches(sandbox.state, runtime.sessions) == sum(sizes)
    # One request per page; the last page is the short one (empty when size % PAGE == 0).
    assert requests == sum(size // PAGE + 1 for size in sizes)


def test_new_postings_arrive_after_the_stored_cursor(
    runtime: Runtime, sandbox: SandboxServer, probe: RequestProbe
) -> None:
    refs = build_bulk(sandbox.state, holdings=2, postings=130, seed=3)
    new = discover(runtime).new_holdings
    catch_up(runtime, new)
    # Live credits land in the same millisecond (ties on postedAt) and after the old ones.
    for ref in refs:
        for amount in (101, 102, 103):
            sandbox.state.post_inbound_credit(ref["holdingRef"], amount, str(uuid.uuid4()))
    before = probe.count("GET /v1/balances/activity")
    catch_up(runtime, new)
    assert probe.count("GET /v1/balances/activity") - before == len(new)
    assert assert_store_matches(sandbox.state, runtime.sessions) == 136


def test_a_read_cut_off_mid_catch_up_resumes_from_the_stored_cursor(
    worker_settings: Settings, sandbox: SandboxServer, probe: RequestProbe
) -> None:
    build_bulk(sandbox.state, holdings=1, postings=420, seed=11)

    class Crash(BaseException):
        """The process dying between two requests, as far as the reader can tell."""

    calls = {"n": 0, "served": 0}

    def dies_on_fourth_page(request: httpx.Request) -> httpx.Response:
        activity = request.url.path.endswith("/balances/activity")
        if activity:
            calls["n"] += 1
            if calls["n"] == 4:
                raise Crash
        with httpx.HTTPTransport() as real:
            response = real.handle_request(request)
            response.read()
        # A provider that refuses oldest_first answers the first request with a 400 (the probe).
        calls["served"] += activity and response.status_code == 200
        return response

    crashing = build_runtime(worker_settings, transport=httpx.MockTransport(dies_on_fourth_page))
    try:
        holding = discover(crashing).new_holdings[0]
        with pytest.raises(Crash):
            read_activity(crashing, holding)
    finally:
        release_runtime(crashing)
    healthy = build_runtime(worker_settings)
    try:
        before = probe.count("GET /v1/balances/activity")
        assert read_activity(healthy, holding).caught_up
        # The pages served before the crash were stored; the rest of the nine (eight full,
        # one of 20) is read once, and the short last page is known to be last.
        assert 2 <= calls["served"] <= 3
        assert probe.count("GET /v1/balances/activity") - before == 420 // 50 + 1 - calls["served"]
        assert assert_store_matches(sandbox.state, healthy.sessions) == 420
    finally:
        release_runtime(healthy)


def test_5xx_429_dropped_connections_and_timeouts_converge_to_the_exact_ledger(
    worker_settings: Settings, sandbox: SandboxServer
) -> None:
    build_bulk(sandbox.state, holdings=3, postings=600, seed=5)
    route = "GET /v1/balances/activity"
    faults = sandbox.state.faults
    faults.add_route(Fault(target=route, kind="error_5xx", rate=0.25))
    faults.add_route(Fault(target=route, kind="rate_limit_429", rate=0.1, seconds=0))
    faults.add_route(Fault(target=route, kind="drop_connection", rate=0.1))
    faults.add_route(Fault(target=route, kind="malformed_json", rate=0.05))
    faults.add_route(Fault(target=route, kind="slow", count=3, seconds=1.0))
    rt = build_runtime(
        worker_settings, timeout=httpx.Timeout(connect=1.0, read=0.4, write=1.0, pool=1.0)
    )
    try:
        new = discover(rt).new_holdings
        catch_up(rt, new)
        assert assert_store_matches(sandbox.state, rt.sessions) == 600
        fired = {f.kind: f.fired for f in faults.route_faults}
        assert fired["error_5xx"] > 0 and fired["slow"] == 3
    finally:
        release_runtime(rt)
