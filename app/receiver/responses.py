"""The receiver's answers: pre-encoded acknowledgements and refusals that say what to fix."""

from __future__ import annotations

from typing import Final

import msgspec
from litestar.types import Send

from app.correlation import REQUEST_ID_HEADER
from reconciliation.notifications import Outcome

#: Acknowledgement bodies, encoded once: the hot path sends bytes it already has.
ACKNOWLEDGEMENTS: Final = {
    outcome: msgspec.json.encode({"outcome": outcome.value}) for outcome in Outcome
}
_JSON: Final = (b"content-type", b"application/json")
#: The acknowledgements' Content-Length headers, also made once.
_ACKNOWLEDGEMENT_LENGTHS: Final = {
    outcome: (b"content-length", str(len(body)).encode())
    for outcome, body in ACKNOWLEDGEMENTS.items()
}


async def acknowledge(send: Send, outcome: Outcome, request_id: bytes) -> None:
    """The 200 of a committed delivery: everything but the correlation id made in advance."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [_JSON, _ACKNOWLEDGEMENT_LENGTHS[outcome], (REQUEST_ID_HEADER, request_id)],
        }
    )
    await send(
        {"type": "http.response.body", "body": ACKNOWLEDGEMENTS[outcome], "more_body": False}
    )


async def send_json(
    send: Send, status: int, body: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """One complete JSON response."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [_JSON, (b"content-length", str(len(body)).encode()), *extra],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


def refusal_body(outcome: str, detail: str) -> bytes:
    """`{"error": <outcome>, "detail": <what was wrong and what to do>}`."""
    return msgspec.json.encode({"error": outcome, "detail": detail})
