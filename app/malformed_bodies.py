"""The answer to a request body no decoder can read: 400 naming what is wrong, never a 500.

Litestar decodes a JSON body with msgspec when a handler asks for it, and lets two errors
through as if they were bugs: `UnicodeDecodeError` for bytes that are not UTF-8, and
`RecursionError` for a document nested deeper than the decoder goes (about a thousand levels).
Both are the client's mistake, so the client hears it, and the log does not report an error.
"""

from __future__ import annotations

from typing import Any, Final

from litestar import Request, Response

#: What each exception says to the client: the problem and what to send instead.
MESSAGES: Final[dict[type[Exception], str]] = {
    UnicodeDecodeError: "the request body is not valid UTF-8: send it (JSON or a form) encoded as UTF-8",
    RecursionError: "the request body is nested too deeply to read: send a flat JSON object",
}


def malformed_body(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """400 with the reason from MESSAGES (the bytes themselves are never echoed)."""
    detail = next(text for kind, text in MESSAGES.items() if isinstance(exc, kind))
    return Response({"status_code": 400, "detail": detail}, status_code=400)


#: For `Litestar(exception_handlers=...)`.
EXCEPTION_HANDLERS: Final = dict.fromkeys(MESSAGES, malformed_body)
