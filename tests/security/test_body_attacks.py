"""Bodies built to break the parser, against a real `recon web`: deep nesting, bad UTF-8.

Before: a signed delivery nested a thousand levels deep got a 500 (`RecursionError` while
reading its kind) and was not stored, so the provider retried it forever; an admin API body
with invalid UTF-8 got a 500.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN, PATH, signed_headers
from tests.security.conftest import WebProcess

#: Deeper than either JSON decoder reads (both stop near a thousand levels).
DEPTH = 5_000


def _deliveries(web: WebProcess, state: str) -> list[dict[str, object]]:
    response = httpx.get(
        f"{web.base}/deliveries", params={"state": state}, headers=ADMIN, timeout=30
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, object]] = response.json()["items"]
    return items


@pytest.mark.parametrize(
    "body",
    [
        b"[" * DEPTH + b"]" * DEPTH,
        b'{"id": "deep-1", "event": "PAYMENT_RECEIVED", "data": '
        + b"[" * DEPTH
        + b"]" * DEPTH
        + b"}",
        b'{"id": ' + b'{"a": ' * DEPTH + b"1" + b"}" * DEPTH + b"}",
    ],
    ids=["bare-array", "deep-data", "deep-id"],
)
def test_a_signed_body_nested_thousands_deep_is_stored_quarantined(
    security_env: dict[str, str], web_process: Callable[..., WebProcess], body: bytes
) -> None:
    web = web_process(security_env)
    headers = signed_headers(body)
    response = httpx.post(web.base + PATH, content=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    quarantined = _deliveries(web, "quarantined")
    assert len(quarantined) == 1
    row_id = quarantined[0]["id"]
    shown = httpx.get(f"{web.base}/deliveries/{row_id}", headers=ADMIN, timeout=30).json()
    assert "nested too deeply" in str(shown["delivery"]["error"])
    # Kept byte for byte, and a retry by the provider is the same delivery, not a second one.
    assert base64.b64decode(shown["bodyBase64"]) == body
    again = httpx.post(web.base + PATH, content=body, headers=headers, timeout=30)
    assert again.status_code == 200
    assert len(_deliveries(web, "quarantined")) == len(quarantined)
    assert "RecursionError" not in web.log_text()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/alerts/1/ack", b'{"by": "\xff\xfe ops"}'),
        ("/alerts/1/resolve", b'{"by": "ops", "note": "\xc3\x28"}'),
        ("/alerts/1/ack", b'{"by": ' + b"[" * DEPTH + b"]" * DEPTH + b"}"),
    ],
    ids=["bad-start-byte", "bad-continuation", "deep"],
)
def test_an_admin_api_body_with_invalid_utf8_or_too_deep_is_a_400(
    security_env: dict[str, str], web_process: Callable[..., WebProcess], path: str, body: bytes
) -> None:
    web = web_process(security_env)
    response = httpx.post(
        web.base + path,
        content=body,
        headers={**ADMIN, "content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400, (response.status_code, response.text)
    assert response.json()["detail"]
    assert "web.unhandled_error" not in web.log_text()
