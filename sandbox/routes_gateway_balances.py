"""Gateway balances: the snapshot (lagging projection) and posted activity (four-part cursor).

Activity plays the provider variant's answer to each paging choice the spec leaves open
(`sandbox/variants.py`): what `nextCursor` is on the last page (the last entry's position, null,
or no member), the page-size cap and what happens above it (400, or the cap served silently),
and which `sortDirection` values are accepted (a refused one is 400 InvalidInput).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Request, Response, get

from sandbox import config as c
from sandbox.config import format_timestamp, parse_timestamp
from sandbox.envelopes import ACCOUNTS, invalid_input, json_response, not_found, read_body, success
from sandbox.ids import uuid_int, uuid_text
from sandbox.ledger import (
    NEWEST_FIRST,
    SORT_DIRECTIONS,
    CursorKey,
    Holding,
    entries_json,
    find_key,
    more_after,
    page,
    render_holding_balance,
)
from sandbox.state import SandboxState
from sandbox.validation import page_size, query_uuid

CURSOR_PARTS = ("afterPostedAt", "afterReceiptRef", "afterLineRef")


def render_cursor(key: CursorKey, direction: str) -> dict[str, str]:
    return {
        "afterPostedAt": format_timestamp(key[0]),
        "afterReceiptRef": uuid_text(key[1]),
        "afterLineRef": uuid_text(key[2]),
        "sortDirection": direction,
    }


def parse_cursor(holding: Holding, query: Mapping[str, str], direction: str) -> CursorKey | None:
    """The cursor a request resumes from; refused when partial, altered or mixed."""
    present = [p for p in CURSOR_PARTS if query.get(p)]
    if not present:
        return None
    if len(present) != len(CURSOR_PARTS) or not query.get("sortDirection"):
        raise invalid_input(
            "A cursor is four parts (afterPostedAt, afterReceiptRef, afterLineRef, "
            "sortDirection): resume with every value of nextCursor."
        )
    posted = parse_timestamp(query["afterPostedAt"])
    receipt = query_uuid(query, "afterReceiptRef")
    line = query_uuid(query, "afterLineRef")
    if posted is None or receipt is None or line is None:
        raise invalid_input("`afterPostedAt` must be a timestamp exactly as nextCursor gave it.")
    key = (posted, uuid_int(receipt), uuid_int(line))
    if find_key(holding, key) is None:
        raise invalid_input("The cursor names no posting of this holding (altered or mixed).")
    if (*key, SORT_DIRECTIONS.index(direction)) not in holding.issued:
        raise invalid_input(
            "The cursor was not issued for this sortDirection: never change direction mid-page."
        )
    return key


def balance_handlers(state: SandboxState) -> list[Any]:
    @get(
        "/balances/current",
        opt={"route_key": "GET /v1/balances/current", "capability": c.BALANCE_READ},
    )
    async def current_balance(request: Request[Any, Any, Any]) -> Response[bytes]:
        query = request.query_params
        account_ref = query_uuid(query, "accountRef")
        endpoint_ref = query_uuid(query, "endpointRef")
        holding_ref = query_uuid(query, "holdingRef", required=False)
        with state.lock:
            ep = state.endpoint(endpoint_ref or "")
            if ep is None or ep.account_ref != account_ref:
                raise not_found(f"No endpoint {endpoint_ref} under account {account_ref}.")
            if holding_ref is not None and holding_ref != ep.holding_ref:
                raise not_found(f"No holding {holding_ref} under endpoint {endpoint_ref}.")
            holding = state.holdings[ep.holding_ref]
            value = {
                "accountRef": ep.account_ref,
                "endpointRef": ep.endpoint_ref,
                "holdingBalances": [render_holding_balance(holding, state.clock.now_ms())],
                "projectionState": "Projected",
            }
            receipt = state.ids.new()
        return json_response(success(200, read_body(value, receipt, ACCOUNTS), [receipt]), 200)

    @get(
        "/balances/activity",
        opt={"route_key": "GET /v1/balances/activity", "capability": c.ACTIVITY_READ},
    )
    async def activity(request: Request[Any, Any, Any]) -> Response[bytes]:
        query = request.query_params
        cfg = state.config
        account_ref = query_uuid(query, "accountRef")
        endpoint_ref = query_uuid(query, "endpointRef")
        holding_ref = query_uuid(query, "holdingRef")
        variant = cfg.variant
        size = page_size(
            query.get("pageSize"), cfg.activity_page_default, variant.page_cap, variant.over_cap
        )
        direction = query.get("sortDirection") or NEWEST_FIRST
        accepted = [d for d in SORT_DIRECTIONS if d in variant.sort_directions]
        if direction not in accepted:
            raise invalid_input(f"`sortDirection` must be one of {', '.join(accepted)}.")
        assert account_ref is not None and endpoint_ref is not None and holding_ref is not None
        with state.lock:
            holding = state.holding_at(account_ref, endpoint_ref, holding_ref)
            after = parse_cursor(holding, query, direction)
            rows = page(holding, direction, size, after)
            entries = entries_json(holding, rows)
            next_cursor: dict[str, str] | None = None
            last_page = True
            if rows:
                last = rows[-1]
                key = (last[0], last[1], last[2])
                # Resuming after the last entry served is valid whether or not a cursor says so:
                # a provider that sends none on its last page must accept that position later.
                holding.issued.add((*key, SORT_DIRECTIONS.index(direction)))
                last_page = not more_after(holding, direction, key)
                next_cursor = render_cursor(key, direction)
            elif after is not None:
                next_cursor = render_cursor(after, direction)
            receipt = state.ids.new()
        value: dict[str, Any] = {
            "accountRef": account_ref,
            "endpointRef": endpoint_ref,
            "holdingRef": holding_ref,
            "entries": entries,
            "sortDirection": direction,
            "nextCursor": next_cursor,
        }
        if last_page and variant.last_page_cursor == "null":
            value["nextCursor"] = None
        elif last_page and variant.last_page_cursor == "absent":
            del value["nextCursor"]
        return json_response(success(200, read_body(value, receipt, ACCOUNTS), [receipt]), 200)

    return [current_balance, activity]
