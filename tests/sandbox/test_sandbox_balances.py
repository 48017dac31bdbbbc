"""Gateway: GET /v1/balances/current (projection lag) and GET /v1/balances/activity (the
four-part cursor, ties, both directions, refusals), per gateway-api.md and docs/decisions.md.

Activity tests whose assertions hold only for our first guesses (a cursor on the last page, a
cap of 200 refused above, both directions) run on a sandbox pinned to the `recon` preset
(`recon_world`); the other choices are played by `variant_world` per value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from litestar.testing import TestClient

from sandbox.app import create_app
from sandbox.bulk import build_bulk
from sandbox.clock import Clock
from sandbox.state import SandboxState
from sandbox.variants import PRESETS, parse_variant
from tests.sandbox.sandbox_helpers import (
    AUTH,
    NGN,
    World,
    is_ts,
    is_uuid,
    new_key,
    problem,
    read_value,
    sandbox_config,
)

ENTRY_FIELDS = {
    "postedAt",
    "receiptRef",
    "journalRef",
    "lineRef",
    "journalKind",
    "postingSide",
    "balanceEffect",
    "amountMinorUnits",
    "valueUnit",
    "ledgerPartition",
    "ledgerNormalSide",
}
CURSOR_FIELDS = {"afterPostedAt", "afterReceiptRef", "afterLineRef", "sortDirection"}


def activity(world: World, h: dict[str, str], **params: Any) -> Any:
    q = {
        "accountRef": h["accountRef"],
        "endpointRef": h["endpointRef"],
        "holdingRef": h["holdingRef"],
        **params,
    }
    return world.client.get("/v1/balances/activity", params=q, headers=AUTH)


def walk(world: World, h: dict[str, str], direction: str, size: int) -> list[dict[str, Any]]:
    """Every page until an empty one, resuming each time with all of nextCursor."""
    entries: list[dict[str, Any]] = []
    cursor: dict[str, str] = {}
    while True:
        params = {"pageSize": size, "sortDirection": direction, **cursor}
        value = read_value(activity(world, h, **params), "Accounts")
        assert set(value) == {
            "accountRef",
            "endpointRef",
            "holdingRef",
            "entries",
            "sortDirection",
            "nextCursor",
        }
        assert value["sortDirection"] == direction
        assert len(value["entries"]) <= size
        if not value["entries"]:
            # an empty page echoes the cursor it was given
            assert value["nextCursor"] == (cursor or None)
            return entries
        entries += value["entries"]
        nxt = value["nextCursor"]
        assert set(nxt) == CURSOR_FIELDS and nxt["sortDirection"] == direction
        last = value["entries"][-1]
        assert (nxt["afterPostedAt"], nxt["afterReceiptRef"], nxt["afterLineRef"]) == (
            last["postedAt"],
            last["receiptRef"],
            last["lineRef"],
        )
        cursor = nxt


def order_key(e: dict[str, Any]) -> tuple[str, str, str]:
    return (e["postedAt"], e["receiptRef"], e["lineRef"])


@pytest.fixture(scope="module")
def _recon_world() -> Iterator[World]:
    state = SandboxState(sandbox_config(variant=PRESETS["recon"]))
    with TestClient(create_app(state=state)) as client:
        yield World(state, client)
    state.close()


@pytest.fixture
def recon_world(_recon_world: World) -> World:
    """A fresh world playing our first guesses, whatever RECON_SANDBOX_VARIANT says."""
    _recon_world.state.reset()
    return _recon_world


@contextmanager
def variant_world(spec: str) -> Iterator[World]:
    """A world playing the provider variant `spec` (as RECON_SANDBOX_VARIANT takes it)."""
    state = SandboxState(sandbox_config(variant=parse_variant(spec)))
    with TestClient(create_app(state=state)) as client:
        yield World(state, client)
    state.close()


@pytest.fixture
def bulk_holding(recon_world: World) -> dict[str, str]:
    """One holding with 1,000 postings and many equal postedAt values."""
    holdings = build_bulk(recon_world.state, holdings=2, postings=2_000, seed=7)
    return holdings[0]


@pytest.mark.parametrize("size", [1, 7, 50, 200])
@pytest.mark.parametrize("direction", ["oldest_first", "newest_first"])
def test_every_posting_exactly_once_in_order_over_ties(
    recon_world: World, bulk_holding: dict[str, str], direction: str, size: int
) -> None:
    expected = recon_world.state.postings(bulk_holding["holdingRef"])
    ties = Counter(e["postedAt"] for e in expected)
    assert max(ties.values()) >= 3  # the scenario really has ties
    got = walk(recon_world, bulk_holding, direction, size)
    assert len(got) == len(expected) == 1000
    assert len({(e["journalRef"], e["lineRef"]) for e in got}) == 1000
    want = sorted(expected, key=order_key, reverse=direction == "newest_first")
    assert got == want
    for e in got:
        assert set(e) == ENTRY_FIELDS
        assert is_ts(e["postedAt"])
        assert all(is_uuid(e[k]) for k in ("receiptRef", "journalRef", "lineRef"))
        assert e["journalKind"] == "transfer_settlement"
        assert (e["postingSide"], e["balanceEffect"]) == ("credit", "increase")
        assert e["valueUnit"] == NGN
        assert (e["ledgerPartition"], e["ledgerNormalSide"]) == (
            "customer_liability",
            "credit_normal",
        )


def test_default_direction_and_page_size(recon_world: World, bulk_holding: dict[str, str]) -> None:
    value = read_value(activity(recon_world, bulk_holding))
    assert value["sortDirection"] == "newest_first"
    assert len(value["entries"]) == 50
    assert value["entries"] == sorted(value["entries"], key=order_key, reverse=True)


@pytest.mark.parametrize("size", ["0", "-1", "201", "x"])
def test_page_size_bounds(recon_world: World, bulk_holding: dict[str, str], size: str) -> None:
    problem(
        activity(recon_world, bulk_holding, pageSize=size), 400, "InvalidInput", "invalid-Input"
    )


def test_page_size_200_is_allowed(recon_world: World, bulk_holding: dict[str, str]) -> None:
    assert len(read_value(activity(recon_world, bulk_holding, pageSize=200))["entries"]) == 200


def first_cursor(world: World, h: dict[str, str], direction: str) -> dict[str, str]:
    value = read_value(activity(world, h, pageSize=10, sortDirection=direction))
    cursor: dict[str, str] = value["nextCursor"]
    return cursor


@pytest.mark.parametrize(
    "missing", ["afterPostedAt", "afterReceiptRef", "afterLineRef", "sortDirection"]
)
def test_partial_cursor_is_refused(
    recon_world: World, bulk_holding: dict[str, str], missing: str
) -> None:
    cursor = first_cursor(recon_world, bulk_holding, "oldest_first")
    cursor.pop(missing)
    problem(activity(recon_world, bulk_holding, **cursor), 400, "InvalidInput", "invalid-Input")


def test_direction_changed_mid_page_is_refused(
    recon_world: World, bulk_holding: dict[str, str]
) -> None:
    cursor = first_cursor(recon_world, bulk_holding, "oldest_first")
    cursor["sortDirection"] = "newest_first"
    problem(activity(recon_world, bulk_holding, **cursor), 400, "InvalidInput", "invalid-Input")


def test_mixed_cursor_parts_are_refused(recon_world: World, bulk_holding: dict[str, str]) -> None:
    a = first_cursor(recon_world, bulk_holding, "oldest_first")
    b = read_value(activity(recon_world, bulk_holding, pageSize=10, **a))["nextCursor"]
    for part in ("afterPostedAt", "afterReceiptRef", "afterLineRef"):
        mixed = {**a, part: b[part]}
        problem(activity(recon_world, bulk_holding, **mixed), 400, "InvalidInput", "invalid-Input")


@pytest.mark.parametrize(
    "alter",
    [
        lambda c: c.update(afterPostedAt=c["afterPostedAt"].replace("Z", "1Z")),
        lambda c: c.update(afterPostedAt=c["afterPostedAt"][:-5] + "Z"),
        lambda c: c.update(afterPostedAt="2026-01-01T00:00:00.000Z"),
        lambda c: c.update(afterReceiptRef=new_key()),
        lambda c: c.update(afterLineRef="not-a-uuid"),
        lambda c: c.update(sortDirection="sideways"),
    ],
)
def test_altered_cursor_is_refused(
    recon_world: World, bulk_holding: dict[str, str], alter: Any
) -> None:
    cursor = first_cursor(recon_world, bulk_holding, "oldest_first")
    alter(cursor)
    problem(activity(recon_world, bulk_holding, **cursor), 400, "InvalidInput", "invalid-Input")


def test_cursor_of_another_holding_is_refused(recon_world: World) -> None:
    a, b = build_bulk(recon_world.state, holdings=2, postings=40, seed=3)
    cursor = first_cursor(recon_world, a, "oldest_first")
    problem(activity(recon_world, b, **cursor), 400, "InvalidInput", "invalid-Input")


def test_required_refs_and_unknown_holding(
    recon_world: World, bulk_holding: dict[str, str]
) -> None:
    for name in ("accountRef", "endpointRef", "holdingRef"):
        params = {k: v for k, v in bulk_holding.items() if k not in (name, "accountNumber")}
        r = recon_world.client.get("/v1/balances/activity", params=params, headers=AUTH)
        problem(r, 400, "InvalidInput", "invalid-Input")
    problem(
        activity(recon_world, {**bulk_holding, "holdingRef": new_key()}),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )
    problem(
        activity(recon_world, {**bulk_holding, "accountRef": new_key()}),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )


@pytest.fixture
def frozen_world() -> Iterator[World]:
    """The clock stands still: every live posting shares one instant unless bumped."""
    from litestar.testing import TestClient

    from sandbox.app import create_app

    state = SandboxState(sandbox_config(variant=PRESETS["recon"]), clock=Clock.frozen())
    with TestClient(create_app(state=state)) as client:
        yield World(state, client)
    state.close()


def test_live_postings_after_a_stored_cursor_are_never_missed(frozen_world: World) -> None:
    world = frozen_world
    ep = world.endpoint()
    for i in range(30):
        world.credit(ep, 100 + i, land=False)
    world.advance(0.1)  # all thirty land at one frozen instant
    h = {k: ep[k] for k in ("accountRef", "endpointRef", "holdingRef")}
    first = walk(world, h, "oldest_first", 8)
    assert len(first) == 30
    assert Counter(e["postedAt"] for e in first).most_common(1)[0][1] >= 2  # ties happened
    cursor = {
        "afterPostedAt": first[-1]["postedAt"],
        "afterReceiptRef": first[-1]["receiptRef"],
        "afterLineRef": first[-1]["lineRef"],
        "sortDirection": "oldest_first",
    }
    for i in range(30):
        world.credit(ep, 1_000 + i, land=False)
    world.advance(0.1)
    more: list[dict[str, Any]] = []
    while True:
        value = read_value(activity(world, h, pageSize=8, **cursor))
        if not value["entries"]:
            break
        more += value["entries"]
        cursor = value["nextCursor"]
    assert [int(e["amountMinorUnits"]) for e in more] == [1_000 + i for i in range(30)]
    times = [e["postedAt"] for e in first + more]
    assert times == sorted(times)


def test_next_cursor_on_the_last_page_and_empty_holding(recon_world: World) -> None:
    ep = recon_world.endpoint()
    h = {k: ep[k] for k in ("accountRef", "endpointRef", "holdingRef")}
    value = read_value(activity(recon_world, h))
    assert value["entries"] == [] and value["nextCursor"] is None
    recon_world.credit(ep, 5)
    value = read_value(activity(recon_world, h, pageSize=10))
    assert len(value["entries"]) == 1 and value["nextCursor"] is not None


# --- provider variants: each "not shown" paging choice, one value at a time --------------


def holding_with(world: World, count: int) -> dict[str, str]:
    (made,) = build_bulk(world.state, holdings=1, postings=count, seed=count)
    return {k: made[k] for k in ("accountRef", "endpointRef", "holdingRef")}


def pages_until_no_cursor(
    world: World, h: dict[str, str], direction: str, size: int
) -> list[dict[str, Any]]:
    """Page values in order, resuming with nextCursor, until one gives none or is empty."""
    values: list[dict[str, Any]] = []
    cursor: dict[str, str] = {}
    while True:
        params = {"pageSize": size, "sortDirection": direction, **cursor}
        value = read_value(activity(world, h, **params))
        values.append(value)
        if not value["entries"] or not value.get("nextCursor"):
            return values
        cursor = value["nextCursor"]


@pytest.mark.parametrize("style", ["last-entry", "null", "absent"])
@pytest.mark.parametrize("direction", ["oldest_first", "newest_first"])
def test_last_page_cursor_as_the_variant_chooses(style: str, direction: str) -> None:
    with variant_world(f"recon,last_page_cursor={style}") as world:
        h = holding_with(world, 25)
        values = pages_until_no_cursor(world, h, direction, 10)
        counts = [len(v["entries"]) for v in values]
        last = values[-1]
        if style == "last-entry":
            # The last page still names its last entry; the next read is empty and echoes it.
            assert counts == [10, 10, 5, 0]
            assert values[2]["nextCursor"]["afterLineRef"] == values[2]["entries"][-1]["lineRef"]
            assert last["nextCursor"] == values[2]["nextCursor"]
        else:
            assert counts == [10, 10, 5]
            assert ("nextCursor" in last) == (style == "null")
            assert last.get("nextCursor") is None
        # Every page before the last carries a cursor naming its last entry.
        for value in values[:2]:
            assert value["nextCursor"]["afterLineRef"] == value["entries"][-1]["lineRef"]
        entries = [e for v in values for e in v["entries"]]
        assert len({e["lineRef"] for e in entries}) == 25


@pytest.mark.parametrize("style", ["null", "absent"])
def test_the_last_entry_of_a_cursorless_page_is_a_valid_place_to_resume(style: str) -> None:
    with variant_world(f"recon,last_page_cursor={style}") as world:
        ep = world.endpoint()
        h = {k: ep[k] for k in ("accountRef", "endpointRef", "holdingRef")}
        for amount in (1, 2, 3):
            world.credit(ep, amount)
        first = read_value(activity(world, h, pageSize=10, sortDirection="oldest_first"))
        assert first.get("nextCursor") is None and len(first["entries"]) == 3
        last = first["entries"][-1]
        resume = {
            "afterPostedAt": last["postedAt"],
            "afterReceiptRef": last["receiptRef"],
            "afterLineRef": last["lineRef"],
            "sortDirection": "oldest_first",
        }
        assert read_value(activity(world, h, pageSize=10, **resume))["entries"] == []
        world.credit(ep, 4)
        later = read_value(activity(world, h, pageSize=10, **resume))
        assert [e["amountMinorUnits"] for e in later["entries"]] == ["4"]
        # Resumed the other way round it is still refused: a position belongs to its direction.
        turned = {**resume, "sortDirection": "newest_first"}
        problem(activity(world, h, **turned), 400, "InvalidInput", "invalid-Input")


def test_a_page_size_over_the_cap_is_refused_when_the_variant_rejects() -> None:
    with variant_world("recon,page_cap=30,over_cap=reject") as world:
        h = holding_with(world, 100)
        r = activity(world, h, pageSize=31)
        body = problem(r, 400, "InvalidInput", "invalid-Input")
        assert "pageSize" in body["problem"]["message"] and "30" in body["problem"]["message"]
        assert len(read_value(activity(world, h, pageSize=30))["entries"]) == 30


@pytest.mark.parametrize("direction", ["oldest_first", "newest_first"])
def test_a_page_size_over_the_cap_is_served_clamped_when_the_variant_clamps(
    direction: str,
) -> None:
    with variant_world("recon,page_cap=30,over_cap=clamp") as world:
        h = holding_with(world, 100)
        values = pages_until_no_cursor(world, h, direction, 200)
        # Asked 200 each time, served 30 without a word; the cursor still leads on.
        assert [len(v["entries"]) for v in values] == [30, 30, 30, 10, 0]
        assert len({e["lineRef"] for v in values for e in v["entries"]}) == 100


def test_the_default_page_size_never_exceeds_the_cap() -> None:
    with variant_world("recon,page_cap=20") as world:
        h = holding_with(world, 100)
        assert len(read_value(activity(world, h))["entries"]) == 20


@pytest.mark.parametrize("preset", ["standard", "sparse"])
def test_a_refused_direction_is_invalid_input_and_newest_first_is_served(preset: str) -> None:
    with variant_world(preset) as world:
        h = holding_with(world, 12)
        r = activity(world, h, sortDirection="oldest_first")
        body = problem(r, 400, "InvalidInput", "invalid-Input")
        assert "sortDirection" in body["problem"]["message"]
        value = read_value(activity(world, h, sortDirection="newest_first", pageSize=5))
        assert value["sortDirection"] == "newest_first" and len(value["entries"]) == 5
        assert value["entries"] == sorted(value["entries"], key=order_key, reverse=True)


def test_the_presets_differ_where_the_spec_is_silent() -> None:
    recon, standard, sparse = (PRESETS[n] for n in ("recon", "standard", "sparse"))
    assert recon.sort_directions == ("newest_first", "oldest_first")
    assert {recon.last_page_cursor, standard.last_page_cursor, sparse.last_page_cursor} == {
        "last-entry",
        "null",
        "absent",
    }
    assert (standard.over_cap, sparse.over_cap) == ("clamp", "clamp")


def test_snapshot_trails_postings_by_the_projection_lag(world: World) -> None:
    ep = world.endpoint()
    sim = world.credit(ep, 7_000, land=False)
    bal = world.balance(ep)
    assert set(bal) == {
        "holdingRef",
        "valueUnit",
        "settledMinorUnits",
        "availableMinorUnits",
        "activeReservedMinorUnits",
        "settledProjectionRef",
        "availableProjectionRef",
        "activeReservationRefs",
        "projectionState",
    }
    assert bal["settledMinorUnits"] == "0" and bal["projectionState"] == "Projected"
    world.advance(0.1)  # the posting lands
    assert (
        world.state.postings(ep["holdingRef"])[0]["receiptRef"] == sim["accountsPostingReceiptRef"]
    )
    assert world.balance(ep)["settledMinorUnits"] == "0"  # still projecting
    world.advance(0.5)
    after = world.balance(ep)
    assert after["settledMinorUnits"] == after["availableMinorUnits"] == "7000"
    assert after["settledProjectionRef"] != bal["settledProjectionRef"]
    assert is_uuid(after["availableProjectionRef"])


def test_snapshot_envelope_and_refs(world: World) -> None:
    ep = world.funded(10)
    params = {"accountRef": ep["accountRef"], "endpointRef": ep["endpointRef"]}
    value = read_value(
        world.client.get("/v1/balances/current", params=params, headers=AUTH), "Accounts"
    )
    assert set(value) == {"accountRef", "endpointRef", "holdingBalances", "projectionState"}
    assert value["projectionState"] == "Projected"
    assert value["holdingBalances"][0]["holdingRef"] == ep["holdingRef"]
    with_holding = {**params, "holdingRef": ep["holdingRef"]}
    assert (
        world.client.get("/v1/balances/current", params=with_holding, headers=AUTH).status_code
        == 200
    )
    for bad in ({**params, "holdingRef": new_key()}, {**params, "accountRef": new_key()}):
        problem(
            world.client.get("/v1/balances/current", params=bad, headers=AUTH),
            404,
            "NotFound",
            "not-found-ResourceMissing",
        )
    problem(
        world.client.get(
            "/v1/balances/current", params={"accountRef": ep["accountRef"]}, headers=AUTH
        ),
        400,
        "InvalidInput",
        "invalid-Input",
    )


def test_balance_equals_posted_sum_once_projected(world: World) -> None:
    src = world.funded(50_000)
    dst = world.endpoint()
    for amount in (1_000, 2_000, 3_000):
        world.client.post(
            "/v1/transfers",
            json=world.transfer_body(src, dst, amount),
            headers={**AUTH, "Idempotency-Key": new_key()},
        )
    world.advance(2.0)
    world.advance(0.5)
    for ep in (src, dst):
        entries = world.state.postings(ep["holdingRef"])
        posted = sum(
            int(e["amountMinorUnits"]) * (1 if e["postingSide"] == "credit" else -1)
            for e in entries
        )
        assert int(world.balance(ep)["settledMinorUnits"]) == posted
    assert world.balance(src)["settledMinorUnits"] == "44000"
