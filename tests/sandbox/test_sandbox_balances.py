"""Gateway: GET /v1/balances/current (projection lag) and GET /v1/balances/activity (the
four-part cursor, ties, both directions, refusals), per gateway-api.md and docs/decisions.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.bulk import build_bulk
from sandbox.clock import Clock
from sandbox.state import SandboxState
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


@pytest.fixture
def bulk_holding(world: World) -> dict[str, str]:
    """One holding with 1,000 postings and many equal postedAt values."""
    holdings = build_bulk(world.state, holdings=2, postings=2_000, seed=7)
    return holdings[0]


@pytest.mark.parametrize("size", [1, 7, 50, 200])
@pytest.mark.parametrize("direction", ["oldest_first", "newest_first"])
def test_every_posting_exactly_once_in_order_over_ties(
    world: World, bulk_holding: dict[str, str], direction: str, size: int
) -> None:
    expected = world.state.postings(bulk_holding["holdingRef"])
    ties = Counter(e["postedAt"] for e in expected)
    assert max(ties.values()) >= 3  # the scenario really has ties
    got = walk(world, bulk_holding, direction, size)
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


def test_default_direction_and_page_size(world: World, bulk_holding: dict[str, str]) -> None:
    value = read_value(activity(world, bulk_holding))
    assert value["sortDirection"] == "newest_first"
    assert len(value["entries"]) == 50
    assert value["entries"] == sorted(value["entries"], key=order_key, reverse=True)


@pytest.mark.parametrize("size", ["0", "-1", "201", "x"])
def test_page_size_bounds(world: World, bulk_holding: dict[str, str], size: str) -> None:
    problem(activity(world, bulk_holding, pageSize=size), 400, "InvalidInput", "invalid-Input")


def test_page_size_200_is_allowed(world: World, bulk_holding: dict[str, str]) -> None:
    assert len(read_value(activity(world, bulk_holding, pageSize=200))["entries"]) == 200


def first_cursor(world: World, h: dict[str, str], direction: str) -> dict[str, str]:
    value = read_value(activity(world, h, pageSize=10, sortDirection=direction))
    cursor: dict[str, str] = value["nextCursor"]
    return cursor


@pytest.mark.parametrize(
    "missing", ["afterPostedAt", "afterReceiptRef", "afterLineRef", "sortDirection"]
)
def test_partial_cursor_is_refused(
    world: World, bulk_holding: dict[str, str], missing: str
) -> None:
    cursor = first_cursor(world, bulk_holding, "oldest_first")
    cursor.pop(missing)
    problem(activity(world, bulk_holding, **cursor), 400, "InvalidInput", "invalid-Input")


def test_direction_changed_mid_page_is_refused(world: World, bulk_holding: dict[str, str]) -> None:
    cursor = first_cursor(world, bulk_holding, "oldest_first")
    cursor["sortDirection"] = "newest_first"
    problem(activity(world, bulk_holding, **cursor), 400, "InvalidInput", "invalid-Input")


def test_mixed_cursor_parts_are_refused(world: World, bulk_holding: dict[str, str]) -> None:
    a = first_cursor(world, bulk_holding, "oldest_first")
    b = read_value(activity(world, bulk_holding, pageSize=10, **a))["nextCursor"]
    for part in ("afterPostedAt", "afterReceiptRef", "afterLineRef"):
        mixed = {**a, part: b[part]}
        problem(activity(world, bulk_holding, **mixed), 400, "InvalidInput", "invalid-Input")


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
def test_altered_cursor_is_refused(world: World, bulk_holding: dict[str, str], alter: Any) -> None:
    cursor = first_cursor(world, bulk_holding, "oldest_first")
    alter(cursor)
    problem(activity(world, bulk_holding, **cursor), 400, "InvalidInput", "invalid-Input")


def test_cursor_of_another_holding_is_refused(world: World) -> None:
    a, b = build_bulk(world.state, holdings=2, postings=40, seed=3)
    cursor = first_cursor(world, a, "oldest_first")
    problem(activity(world, b, **cursor), 400, "InvalidInput", "invalid-Input")


def test_required_refs_and_unknown_holding(world: World, bulk_holding: dict[str, str]) -> None:
    for name in ("accountRef", "endpointRef", "holdingRef"):
        params = {k: v for k, v in bulk_holding.items() if k not in (name, "accountNumber")}
        r = world.client.get("/v1/balances/activity", params=params, headers=AUTH)
        problem(r, 400, "InvalidInput", "invalid-Input")
    problem(
        activity(world, {**bulk_holding, "holdingRef": new_key()}),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )
    problem(
        activity(world, {**bulk_holding, "accountRef": new_key()}),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )


@pytest.fixture
def frozen_world() -> Iterator[World]:
    """The clock stands still: every live posting shares one instant unless bumped."""
    from litestar.testing import TestClient

    from sandbox.app import create_app

    state = SandboxState(sandbox_config(), clock=Clock.frozen())
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


def test_next_cursor_on_the_last_page_and_empty_holding(world: World) -> None:
    ep = world.endpoint()
    h = {k: ep[k] for k in ("accountRef", "endpointRef", "holdingRef")}
    value = read_value(activity(world, h))
    assert value["entries"] == [] and value["nextCursor"] is None
    world.credit(ep, 5)
    value = read_value(activity(world, h, pageSize=10))
    assert len(value["entries"]) == 1 and value["nextCursor"] is not None


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
