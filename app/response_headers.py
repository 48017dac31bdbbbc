"""Headers every answer of the web app carries (but the receiver's): no framing, no sniffing,
no caching, no referrer, and a Content-Security-Policy that allows only recon's own files.

The console, the report downloads and the JSON API all carry financial data: a page that can
be framed can be clickjacked (a hidden sign-out or replay button under a decoy), and a page a
shared browser or proxy keeps in its cache outlives the session that fetched it. The policy
allows scripts and styles from recon's own origin only, so an injected `<script>` or inline
handler does not run even if escaping ever failed; the console has no inline script or style
(app/console/templates, app/console/static) and a test keeps it that way.

Set at the ASGI entry (`app.receiver_first`) rather than as Litestar middleware, so 404s and
refusals the framework answers before any route get them too. A response that sets one of
these headers itself (the HTML report's policy, which allows its one inline stylesheet by
hash) keeps its own value.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final

from litestar.types import Message, Send

#: Only recon's own scripts, styles and images; nothing may frame it, forms post only to it.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)

#: Paths whose answers may be cached: the console's CSS and script hold no data.
CACHEABLE_PREFIX: Final = "/console/static/"

_COMMON: Final = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
_NO_STORE: Final = ((b"cache-control", b"no-store"),)


def policy_with_inline_style(style: str) -> str:
    """The policy, also allowing exactly one inline stylesheet (by its hash): for a document
    that must stand alone when saved, such as the HTML report."""
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    return CONTENT_SECURITY_POLICY.replace(
        "style-src 'self'", f"style-src 'self' 'sha256-{digest}'"
    )


def with_security_headers(send: Send, path: str) -> Send:
    """`send`, adding the headers above to the response's start unless it set them itself."""
    added = _COMMON if path.startswith(CACHEABLE_PREFIX) else _COMMON + _NO_STORE

    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            present = {bytes(name).lower() for name, _ in headers}
            headers += [(name, value) for name, value in added if name not in present]
            message = {**message, "headers": headers}
        await send(message)

    return send_with_headers
