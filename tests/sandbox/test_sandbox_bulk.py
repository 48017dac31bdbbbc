"""Bulk scenario builder: straight into the ledger, fast, and readable through the API."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from sandbox.bulk import build_bulk, prerender_activity
from sandbox.config import SandboxConfig
from sandbox.ledger import entries_json, render_entry
from sandbox.state import SandboxState
from tests.sandbox.sandbox_helpers import AUTH, World, read_value


def test_bulk_through_the_control_api(world: World) -> None:
    r = world.client.post(
        "/_sandbox/scenarios/bulk", json={"holdings": 4, "postings": 1_001, "seed": 9}
    )
    assert r.status_code == 201
    holdings = r.json()["holdings"]
    assert len(holdings) == 4
    counts = [len(world.state.postings(h["holdingRef"])) for h in holdings]
    assert sorted(counts) == [250, 250, 250, 251]
    h = holdings[0]
    q = {k: h[k] for k in ("accountRef", "endpointRef")}
    bal = read_value(world.client.get("/v1/balances/current", params=q, headers=AUTH))
    posted = sum(int(e["amountMinorUnits"]) for e in world.state.postings(h["holdingRef"]))
    assert bal["holdingBalances"][0]["settledMinorUnits"] == str(posted)
    assert not world.state.events  # bulk raises no events


def test_bulk_is_reproducible_from_its_seed() -> None:
    a = SandboxState(SandboxConfig(run_background=False))
    b = SandboxState(SandboxConfig(run_background=False))
    ha = build_bulk(a, holdings=3, postings=300, seed=11)
    hb = build_bulk(b, holdings=3, postings=300, seed=11)
    assert ha == hb
    assert a.postings(ha[1]["holdingRef"]) == b.postings(hb[1]["holdingRef"])


def test_live_postings_sort_after_bulk(world: World) -> None:
    (h,) = build_bulk(world.state, holdings=1, postings=50, seed=1)
    world.state.post_inbound_credit(h["holdingRef"], 77, "6f1c2a34-0000-4000-8000-000000000077")
    assert world.state.postings(h["holdingRef"])[-1]["amountMinorUnits"] == "77"


@pytest.mark.slow
def test_a_million_postings_over_a_thousand_holdings_are_built_and_read_by_cursor(
    world: World,
) -> None:
    # How fast: bench/catchup.py builds the same world and prints it.
    holdings = build_bulk(world.state, holdings=1_000, postings=1_000_000, seed=1)
    assert len(holdings) == 1_000
    assert sum(len(world.state.holdings[h["holdingRef"]].rows) for h in holdings) == 1_000_000
    # a full walk of one holding, and a deep page by cursor
    h = holdings[123]
    params = {k: h[k] for k in ("accountRef", "endpointRef", "holdingRef")}
    cursor: dict[str, str] = {}
    seen = 0
    while True:
        value = read_value(
            world.client.get(
                "/v1/balances/activity",
                params={**params, "pageSize": 200, "sortDirection": "oldest_first", **cursor},
                headers=AUTH,
            )
        )
        if not value["entries"]:
            break
        seen += len(value["entries"])
        cursor = value["nextCursor"]
    assert seen == 1_000
    world.state.reset()  # free the memory for the rest of the session


def _walk(world: World, h: dict[str, str]) -> list[dict[str, Any]]:
    """Every activity page of a holding, oldest first, as the client reads them."""
    params = {k: h[k] for k in ("accountRef", "endpointRef", "holdingRef")}
    pages: list[dict[str, Any]] = []
    cursor: dict[str, str] = {}
    while True:
        value = read_value(
            world.client.get(
                "/v1/balances/activity",
                params={**params, "pageSize": 40, "sortDirection": "oldest_first", **cursor},
                headers=AUTH,
            )
        )
        pages.append(value)
        if len(value["entries"]) < 40:
            return pages
        cursor = value["nextCursor"]


def test_entries_rendered_ahead_read_exactly_as_rendered_on_demand(world: World) -> None:
    (h,) = build_bulk(world.state, holdings=1, postings=150, seed=4)
    on_demand = _walk(world, h)
    prerender_activity(world.state)
    holding = world.state.holdings[h["holdingRef"]]
    assert len(holding.rendered) == 150
    assert _walk(world, h) == on_demand
    rows = holding.rows[:7]
    expected = msgspec.json.encode([render_entry(holding, row) for row in rows])
    assert bytes(entries_json(holding, rows)) == expected
    # A live posting after the pre-render is rendered on demand, on a page with older ones.
    world.state.post_inbound_credit(h["holdingRef"], 77, "6f1c2a34-0000-4000-8000-000000000077")
    last = _walk(world, h)[-1]["entries"]
    assert last[-1]["amountMinorUnits"] == "77" and len(last) == 151 - 3 * 40
