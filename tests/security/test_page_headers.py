"""Pages that cannot be framed, sniffed or cached, and a flash box nobody else can write in.

Before: no Content-Security-Policy (so no `frame-ancestors`), no X-Frame-Options, no
`X-Content-Type-Options: nosniff`, no Cache-Control on console pages, report downloads or the
JSON API, all of which carry financial data; downloads said `charset=utf-8; charset=utf-8`;
`?done=` and `?error=` put any text into the console's flash box.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from app.console import STATIC, TEMPLATES
from tests.integration.app.receiver_helpers import ADMIN
from tests.security.conftest import WebProcess
from tests.security.console_client import signed_in_client

#: What a framing-proof, unsniffable, uncached answer carries.
EXPECTED = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

#: Inline script or style a policy would have to allow: a `<script>` with a body, a `<style>`
#: element, a `style=` attribute, an `on...=` handler, a `javascript:` URL.
INLINE = re.compile(
    r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle\s*=|\son[a-z]+\s*=|javascript:", re.I
)


def _assert_guarded(response: httpx.Response) -> None:
    for name, value in EXPECTED.items():
        assert response.headers.get(name) == value, (response.url, name, response.headers)
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "script-src 'self'" in policy


@pytest.fixture
def web(security_env: dict[str, str], web_process: Callable[..., WebProcess]) -> WebProcess:
    return web_process(security_env)


def test_console_pages_downloads_and_the_api_cannot_be_framed_sniffed_or_cached(
    web: WebProcess,
) -> None:
    with signed_in_client(web.base) as console:
        for path in ("/console", "/console/alerts", "/console/deliveries", "/console/nowhere"):
            _assert_guarded(console.get(path))
        for fmt in ("text", "csv", "html", "json"):
            download = console.get("/console/reports/download", params={"format": fmt})
            assert download.status_code == 200
            _assert_guarded(download)
            # One charset (Litestar adds it to text types itself; it was there twice).
            assert download.headers["content-type"].count("charset") <= 1
    with httpx.Client(base_url=web.base, timeout=30) as anonymous:
        _assert_guarded(anonymous.get("/console/sign-in"))
    with httpx.Client(base_url=web.base, headers=ADMIN, timeout=30) as api:
        for path in ("/deliveries", "/alerts", "/reports/reconciliation?format=html", "/nowhere"):
            _assert_guarded(api.get(path))
        text_report = api.get("/reports/reconciliation", params={"format": "text"})
        assert text_report.headers["content-type"] == "text/plain; charset=utf-8"
    # The console's CSS and script hold no data: they may be cached, and are still nosniff.
    static = httpx.get(f"{web.base}/console/static/console.js", timeout=30)
    assert static.headers["x-content-type-options"] == "nosniff"
    assert "no-store" not in static.headers.get("cache-control", "")


def test_the_html_report_allows_its_own_stylesheet_and_nothing_else_inline(
    web: WebProcess,
) -> None:
    answer = httpx.get(
        f"{web.base}/reports/reconciliation", params={"format": "html"}, headers=ADMIN, timeout=30
    )
    policy = answer.headers["content-security-policy"]
    assert re.search(r"style-src 'self' 'sha256-[A-Za-z0-9+/=]+'", policy)
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy


def test_the_console_has_no_inline_script_or_style_for_the_policy_to_allow() -> None:
    sources = [*TEMPLATES.glob("*.html"), *STATIC.glob("*"), *Path(TEMPLATES.parent).glob("*.py")]
    found = [
        f"{path.name}: {match.group(0)}"
        for path in sources
        for match in INLINE.finditer(path.read_text())
    ]
    assert found == []


@pytest.mark.parametrize(
    "query",
    [
        {"done": "Your session expired: call +1 555 0100 with your admin token"},
        {"error": "Security notice: re-enter the admin token at https://evil.example"},
    ],
)
def test_the_flash_box_shows_only_recon_s_own_sentences(
    web: WebProcess, query: dict[str, str]
) -> None:
    with signed_in_client(web.base) as console:
        page = console.get("/console", params=query)
        assert page.status_code == 200
        (text,) = query.values()
        assert text not in page.text
        assert "flash" not in page.text
        # A key recon knows shows recon's sentence.
        known = console.get("/console", params={"done": "resolved"})
        assert "Alert resolved." in known.text
