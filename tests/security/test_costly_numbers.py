"""Signed deliveries whose numbers cost far more than their size, and event types that are not
UTF-8, against a real `recon web` with its embedded workers.

Before: an amount of `1e999999999999` made the reader write out a trillion digits
(MemoryError): the batch failed and was retried without end, its genuine batch-mates stayed
pending with no error shown; `1e5000000` (a 503-byte body) stored 5 MB of error text and made a
5 MB deliveries page. A `createdAt` of `1e500000` held the interpreter for up to a minute. An
event type with invalid UTF-8 got a 500 (`UnicodeDecodeError` in the receiver), nothing was
stored and the provider retried for ever. Now each is stored, quarantined with a short reason,
and the genuine deliveries beside it are processed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN, PATH, event_body, signed_headers, wait_for
from tests.security.conftest import WebProcess

#: Longest error text a quarantined delivery may show: its cause and a bounded excerpt.
SHORT_ERROR: Final = 2_000
#: Largest deliveries page of a handful of deliveries: a few kilobytes each at most.
SMALL_PAGE: Final = 64_000


def _raw(amount: bytes = b'"1.00"', created_at: bytes = b'"2026-11-22T00:48:01Z"') -> bytes:
    return (
        b'{"id":"'
        + str(uuid.uuid4()).encode()
        + b'","event":"PAYMENT_RECEIVED","createdAt":'
        + created_at
        + b',"data":{"amount":'
        + amount
        + b',"currency":"NGN","status":"SUCCESSFUL"}}'
    )


def _flat(created_at: bytes) -> bytes:
    return (
        b'{"id":"' + str(uuid.uuid4()).encode() + b'","eventType":"PAYMENT_RECEIVED",'
        b'"createdAt":' + created_at + b',"amount":"1.00","currency":"NGN","status":"SUCCESSFUL"}'
    )


def _items(web: WebProcess) -> list[dict[str, object]]:
    page = httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30)
    assert page.status_code == 200, page.text[:500]
    assert len(page.content) < SMALL_PAGE, len(page.content)
    items: list[dict[str, object]] = page.json()["items"]
    return items


def test_costly_numbers_are_quarantined_with_short_reasons_and_genuine_ones_processed(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    costly = [_raw(b"1e999999999999"), _raw(b"1e5000000"), _flat(b"1e500000")]
    genuine = [event_body(), event_body()]
    for body in [genuine[0], *costly, genuine[1]]:
        answer = httpx.post(web.base + PATH, content=body, headers=signed_headers(body), timeout=30)
        assert answer.status_code == 200, answer.text

    def settled() -> list[dict[str, object]] | None:
        items = _items(web)
        done = len(items) == 5 and all(i["state"] != "pending" for i in items)
        return items if done else None

    items = wait_for(settled, 60, "every delivery processed or quarantined")
    states = sorted(str(i["state"]) for i in items)
    assert states == ["processed"] * 2 + ["quarantined"] * 3, items
    for item in items:
        if item["state"] == "quarantined":
            error = str(item["error"])
            assert len(error) < SHORT_ERROR, len(error)
            assert "out of range" in error or "is not a time" in error, error
    assert "MemoryError" not in web.log_text()
    # The shape alert these raise names the problem, not a 10 MB expansion of it.
    alerts = httpx.get(f"{web.base}/alerts", headers=ADMIN, timeout=30)
    assert alerts.status_code == 200 and alerts.json(), alerts.text[:300]
    assert len(alerts.content) < SMALL_PAGE, len(alerts.content)


@pytest.mark.parametrize("member", ["event", "type", "eventType"])
def test_an_event_type_that_is_not_utf8_is_stored_quarantined_not_a_500(
    security_env: dict[str, str], web_process: Callable[..., WebProcess], member: str
) -> None:
    web = web_process(security_env, "--no-workers")
    body = (
        b'{"id":"' + str(uuid.uuid4()).encode() + b'","' + member.encode() + b'":"PAYMENT_\xc3("}'
    )
    headers = signed_headers(body)
    answer = httpx.post(web.base + PATH, content=body, headers=headers, timeout=30)
    assert answer.status_code == 200, (answer.status_code, answer.text)
    [item] = _items(web)
    assert item["state"] == "quarantined"
    assert "not valid JSON text" in str(item["error"]), item
    # The provider's retry is the same delivery, not a second one.
    assert httpx.post(web.base + PATH, content=body, headers=headers, timeout=30).status_code == 200
    assert len(_items(web)) == 1
