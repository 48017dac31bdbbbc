"""Activity cursors kept byte for byte; endpoint listing follows afterEndpointRef to the end."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.unit.upstream.fakes import KEY, REF, Script, ok
from tests.unit.upstream.test_activity_entries import entry
from upstream import ActivityCursor, GatewayClient, ProtocolError
from upstream.wire.common import HoldingAddress

HOLDING = (uuid.UUID(REF), uuid.UUID(REF), uuid.UUID(REF))
HOLDING_ADDRESS = HoldingAddress(
    account_ref=uuid.UUID(REF), endpoint_ref=uuid.UUID(REF), holding_ref=uuid.UUID(REF)
)


def _posting(posted_at: str) -> dict[str, Any]:
    return entry(postedAt=posted_at)


def _page(entries: list[dict[str, Any]], cursor: dict[str, str] | None) -> httpx.Response:
    return ok(
        {
            "accountRef": REF,
            "endpointRef": REF,
            "holdingRef": REF,
            "entries": entries,
            "sortDirection": "oldest_first",
            "nextCursor": cursor,
        }
    )


def _cursor(entry: dict[str, Any]) -> dict[str, str]:
    return {
        "afterPostedAt": entry["postedAt"],
        "afterReceiptRef": entry["receiptRef"],
        "afterLineRef": entry["lineRef"],
        "sortDirection": "oldest_first",
    }


def test_pages_resume_with_the_exact_strings_returned() -> None:
    # An odd but legal spelling: reformatting it as a datetime would change it.
    first = [_posting("2026-11-22T00:48:01.120Z"), _posting("2026-11-22T00:48:01.120Z")]
    second = [_posting("2026-11-22T00:48:02.000Z")]
    odd = _cursor(first[-1]) | {"afterReceiptRef": first[-1]["receiptRef"].upper()}
    script = Script(_page(first, odd), _page(second, _cursor(second[-1])))
    client = GatewayClient("http://gw.test", KEY, transport=script.transport)
    pages = list(client.iter_activity(*HOLDING, page_size=2))
    assert len(pages) == 2 and len(script.requests) == 2
    assert pages[0].next_cursor == ActivityCursor(
        after_posted_at="2026-11-22T00:48:01.120Z",
        after_receipt_ref=first[-1]["receiptRef"].upper(),
        after_line_ref=first[-1]["lineRef"],
        sort_direction="oldest_first",
    )
    params = script.requests[1].url.params
    assert params["afterPostedAt"] == "2026-11-22T00:48:01.120Z"
    assert params["afterReceiptRef"] == first[-1]["receiptRef"].upper()
    assert params["sortDirection"] == "oldest_first" and params["pageSize"] == "2"
    assert "afterPostedAt" not in script.requests[0].url.params
    assert [e.amount_minor_units for p in pages for e in p.entries] == [500, 500, 500]
    assert pages[1].ends_read(largest_served=2)


def test_an_empty_page_resumes_from_the_cursor_it_was_asked_with() -> None:
    start = ActivityCursor(
        after_posted_at="2026-11-22T00:48:01.120Z",
        after_receipt_ref=REF,
        after_line_ref=REF,
        sort_direction="oldest_first",
    )
    script = Script(_page([], None))
    client = GatewayClient("http://gw.test", KEY, transport=script.transport)
    (page,) = client.iter_activity(*HOLDING, cursor=start)
    assert page.next_cursor is start and page.entries == ()
    (page,) = client.iter_activity(*HOLDING)
    assert page.next_cursor is None


@pytest.mark.parametrize("style", ["null", "absent"])
def test_a_last_page_without_a_cursor_resumes_after_its_last_entry_exactly(style: str) -> None:
    entries = [_posting("2026-11-22T00:48:01.120Z"), _posting("2026-11-22T00:48:01.120Z")]
    entries[-1]["receiptRef"] = entries[-1]["receiptRef"].upper()  # kept as listed
    value = _page(entries, None)
    if style == "absent":
        body = value.json()
        del body["body"]["value"]["nextCursor"]
        value = ok(body["body"]["value"])
    client = GatewayClient("http://gw.test", KEY, transport=Script(value).transport)
    (page,) = client.iter_activity(*HOLDING, page_size=5)
    assert page.ends_read(largest_served=0)
    assert page.gateway_cursor is None and page.cursor_source == "entry"
    assert page.next_cursor == ActivityCursor(
        after_posted_at="2026-11-22T00:48:01.120Z",
        after_receipt_ref=entries[-1]["receiptRef"],
        after_line_ref=entries[-1]["lineRef"],
        sort_direction="oldest_first",
    )


@pytest.mark.parametrize(
    "echo",
    [
        lambda e: {
            "afterPostedAt": e["postedAt"],
            "afterReceiptRef": e["receiptRef"],
            "afterLineRef": e["lineRef"],
        },
        lambda e: {
            "postedAt": e["postedAt"],
            "receiptRef": e["receiptRef"],
            "lineRef": e["lineRef"],
        },
        lambda e: {
            "postedAt": e["postedAt"],
            "receiptRef": e["receiptRef"],
            "lineRef": e["lineRef"],
            "direction": "newest_first",
        },
    ],
)
def test_cursor_parts_are_read_however_the_gateway_names_them(echo: Any) -> None:
    entries = [_posting("2026-11-22T00:48:01.120Z")]
    body = {
        "accountRef": REF,
        "endpointRef": REF,
        "holdingRef": REF,
        "entries": entries,
        "nextCursor": echo(entries[-1]),
    }
    script = Script(ok(body))
    client = GatewayClient("http://gw.test", KEY, transport=script.transport)
    page = client.activity_page(HOLDING_ADDRESS, page_size=1, sort_direction="newest_first")
    # No sortDirection in the page nor in the cursor: the one asked.
    assert page.gateway_cursor == ActivityCursor(
        after_posted_at=entries[0]["postedAt"],
        after_receipt_ref=entries[0]["receiptRef"],
        after_line_ref=entries[0]["lineRef"],
        sort_direction="newest_first",
    )
    assert page.cursor_source == "gateway" and not page.ends_read(largest_served=0)


def test_a_cursor_missing_a_positional_part_is_refused_naming_it() -> None:
    entries = [_posting("2026-11-22T00:48:01.120Z")]
    partial = {"afterPostedAt": entries[0]["postedAt"], "afterLineRef": entries[0]["lineRef"]}
    client = GatewayClient(
        "http://gw.test", KEY, transport=Script(_page(entries, partial)).transport
    )
    with pytest.raises(ProtocolError, match="afterReceiptRef"):
        list(client.iter_activity(*HOLDING))


def test_a_short_page_is_last_only_once_a_larger_one_was_served() -> None:
    first = [_posting("2026-11-22T00:48:01.120Z") for _ in range(3)]
    second = [_posting("2026-11-22T00:48:02.000Z") for _ in range(3)]
    third = [_posting("2026-11-22T00:48:03.000Z")]
    # Asked 10, served 3 (a cap not shown): the reader cannot know 3 is not the end, so it
    # asks once more; 3 again is as large as any page served, so it goes on; 1 is the end.
    script = Script(
        _page(first, _cursor(first[-1])),
        _page(second, _cursor(second[-1])),
        _page(third, _cursor(third[-1])),
    )
    client = GatewayClient("http://gw.test", KEY, transport=script.transport)
    pages = list(client.iter_activity(*HOLDING, page_size=10))
    assert [len(p.entries) for p in pages] == [3, 3, 1]
    assert len(script.requests) == 3


def test_a_cursor_is_never_turned_around() -> None:
    cursor = ActivityCursor(
        after_posted_at="x",
        after_receipt_ref=REF,
        after_line_ref=REF,
        sort_direction="newest_first",
    )
    client = GatewayClient("http://gw.test", KEY, transport=Script(_page([], None)).transport)
    with pytest.raises(ValueError, match="turn the reader around"):
        client.iter_activity(*HOLDING, cursor=cursor, sort_direction="oldest_first")


def _row() -> dict[str, Any]:
    return {
        "family": "customer_balance_internal",
        "accountRef": str(uuid.uuid4()),
        "endpointRef": str(uuid.uuid4()),
        "ownerRef": REF,
        "ownerKind": "business-entity",
        "unit": {"kind": "fiat", "currency": "NGN"},
        "capabilityPosture": {"receive": "internal_only", "send": "outbound_enabled"},
        "locatorSummary": {"kind": "no_locator", "forms": []},
    }


def test_endpoint_lister_follows_after_endpoint_ref_at_page_size_100() -> None:
    full = [_row() for _ in range(100)]
    rest = [_row() for _ in range(3)]

    def page(rows: list[dict[str, Any]]) -> httpx.Response:
        return ok({"organisationRef": REF, "appRef": REF, "environmentRef": REF, "rows": rows})

    script = Script(page(full), page(rest))
    client = GatewayClient("http://gw.test", KEY, transport=script.transport)
    rows = list(client.iter_programmable_endpoints())
    assert len(rows) == 103
    first, second = (r.url.params for r in script.requests)
    assert first["pageSize"] == "100" and "afterEndpointRef" not in first
    assert second["afterEndpointRef"] == full[-1]["endpointRef"]
