"""Reading a provider's answer: its body (size-capped), its JSON, Retry-After, and its meaning.

The request loop (`upstream.transport`) sends and retries; this module decides what came back.
Both APIs share it: each supplies only how to read its own error envelope into `ErrorDetails`.
An HTTP status becomes one of the typed errors of `upstream.errors` with a message that says
what to do; Retry-After (seconds or an HTTP date) becomes seconds to wait.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Final

import httpx
import msgspec

from upstream.calls import Call
from upstream.errors import (
    CallInfo,
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidInput,
    NotFound,
    ProviderError,
    RateLimited,
    StaleGuard,
    Unauthorized,
    Unavailable,
)
from upstream.wire.evidence import Evidence

#: Seconds to wait after a 429 that names no (readable) Retry-After: long enough not to hammer
#: a provider that is shedding load, short enough to stay well inside a call's deadline.
DEFAULT_RETRY_AFTER: Final = 1.0
#: Largest answer body read into memory (decoded bytes). The largest legitimate answer is a
#: full page (200 postings or 100 endpoints at roughly 2 KB each: well under 1 MB); 8 MiB leaves
#: room for a provider with fatter records while keeping a runaway body (a proxy's error page
#: streamed forever, a decompression bomb) from taking a worker's memory.
MAX_RESPONSE_BYTES: Final = 8 * 1024 * 1024
#: Retry-After as delta-seconds (RFC 9110 says digits; a decimal fraction is tolerated).
_DELTA_SECONDS: Final = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,6})?")


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    """What an API's error envelope said: the provider's kind, code, words and receipts."""

    kind: str | None = None
    code: str | None = None
    message: str | None = None
    evidence: tuple[Evidence, ...] = ()


EnvelopeReader = Callable[[object], ErrorDetails]


class _Unreadable:
    """Marker for a body that is not JSON (kept distinct from a JSON null)."""


UNREADABLE: Final = _Unreadable()


def read_capped_body(response: httpx.Response, limit: int) -> bytes | None:
    """The whole body of a streamed response, or None as soon as it exceeds `limit` bytes.

    A declared Content-Length over the limit is refused before reading a byte; otherwise the
    body is read chunk by chunk (decoded, so a compressed body is measured as it expands) and
    reading stops at the first byte past the limit.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def decode_json(content: bytes) -> object:
    """The decoded JSON of a body, or `UNREADABLE`."""
    try:
        return msgspec.json.decode(content)
    except msgspec.DecodeError:
        return UNREADABLE


def retry_after_seconds(
    value: str | None, *, sent_at: str | None = None, now: float | None = None
) -> float | None:
    """Seconds to wait from a Retry-After header, or None if there is none or it is unreadable.

    Delta-seconds are taken as they are. An HTTP date is measured from the answer's own Date
    header when it has one (`sent_at`), so a provider whose clock differs from ours still gets
    the wait it meant; otherwise from our clock (`now`, default the current time). A date in
    the past means "now": 0.
    """
    if value is None:
        return None
    text = value.strip()
    if _DELTA_SECONDS.fullmatch(text):
        return float(text)
    when = _http_date(text)
    if when is None:
        return None
    base = _http_date(sent_at) if sent_at else None
    reference = base if base is not None else (time.time() if now is None else now)
    return max(0.0, when - reference)


def parse_retry_after(value: str | None, *, sent_at: str | None = None) -> float:
    """Seconds to wait after a 429: its Retry-After, or `DEFAULT_RETRY_AFTER` without one."""
    seconds = retry_after_seconds(value, sent_at=sent_at)
    return DEFAULT_RETRY_AFTER if seconds is None else seconds


def _http_date(text: str) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" means UTC with no claim about the local zone
        when = when.replace(tzinfo=UTC)
    stamp = when.timestamp()
    return stamp if math.isfinite(stamp) else None


_IDEMPOTENCY_WORDS = ("envelope", "existing", "different", "material", "reuse", "change")


def looks_like_idempotency_conflict(call: Call, details: ErrorDetails) -> bool:
    """A 400 on a keyed write whose message is about the idempotent identity, not the input."""
    if call.idempotency_key is None or not details.message:
        return False
    text = details.message.lower()
    return "idempot" in text and any(word in text for word in _IDEMPOTENCY_WORDS)


def status_error(
    call: Call,
    status: int,
    headers: Mapping[str, str],
    info: CallInfo,
    details: ErrorDetails,
    *,
    api: str,
    credential_hint: str,
) -> ProviderError:
    """Map an HTTP error status to the typed exception, with a message that says what to do.

    Every 4xx and 5xx maps to a class a caller can act on; statuses the specs never name get
    the class of their family (a 4xx the provider did not like is InvalidInput, any 5xx is
    Unavailable), so a provider that answers 422 where we guessed 400 changes nothing upstream.
    """
    said = f": {info.provider_message}" if info.provider_message else ""
    where = f"{call.method} {info.path} answered {status}"
    credentials = credential_hint or "credentials"
    if status == 401:
        return Unauthorized(
            f"{api} did not accept the credentials ({where} Unauthorized). Check the "
            f"{credentials} for stray spaces or characters, and that the credentials belong to "
            "this environment.",
            info,
        )
    if status == 403:
        cap = call.capability
        needs = f"the capability {cap}" if cap else "a capability"
        grant = f"Ask the provider to grant {cap} to this key." if cap else ""
        return Forbidden(
            f"The API key lacks {needs} needed for {call.operation} ({where} Forbidden). "
            f"{grant}".rstrip(),
            info,
            capability=cap,
        )
    if status == 400 and looks_like_idempotency_conflict(call, details):
        return IdempotencyConflict(
            f"Idempotency-Key {call.idempotency_key} was already used for {call.operation} "
            "with different request material, so the gateway refused this request (400) and "
            "did nothing. Send the original material under this key, or the new material "
            f"under a new key{said}.",
            info,
        )
    if status in (404, 410):
        return NotFound(
            f"{call.operation}: no such resource ({where}){said}. Check the reference and "
            "that it belongs to this environment.",
            info,
        )
    if status == 409:
        if "stale" in f"{details.code} {details.kind} {details.message}".lower():
            return StaleGuard(
                f"{call.operation}: the lifecycle guard is stale ({where}); the endpoint "
                "changed since it was read. Read it again, decide again and send a new "
                "command. This is never retried automatically.",
                info,
            )
        return Conflict(f"{call.operation} conflicts with current state ({where}){said}.", info)
    if status == 429:
        wait = parse_retry_after(headers.get("Retry-After"), sent_at=headers.get("Date"))
        return RateLimited(
            f"{api} rate-limited {call.operation} ({where}); retry after {wait:g}s.",
            info,
            retry_after=wait,
        )
    if status == 408:
        # The server gave up waiting for our request: nothing was processed.
        return Unavailable(
            f"{api} timed out reading {call.operation} ({where}). Try again later.",
            info,
            maybe_processed=False,
        )
    if 400 <= status < 500:
        return InvalidInput(
            f"{call.operation} was refused as invalid ({where}){said}. Correct the request; "
            "repeating it unchanged will not help.",
            info,
        )
    if status >= 500:
        asked = retry_after_seconds(headers.get("Retry-After"), sent_at=headers.get("Date"))
        later = f"Try again in {asked:g}s." if asked is not None else "Try again later."
        return Unavailable(
            f"{api} could not serve {call.operation} ({where}){said}. {later}",
            info,
            retry_after=asked,
        )
    return ProviderError(
        f"{call.operation}: unexpected answer ({where}){said}. A redirect or an informational "
        "status means the configured base URL does not point at the API itself.",
        info,
    )
