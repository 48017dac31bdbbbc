"""From verified bytes to an inbox record: the only place the receiver reads the body.

It runs strictly after the signature was verified on the exact bytes received (invariant 1, docs/architecture.md).
What it reads is limited to what the inbox needs to file the delivery: the delivery id (for
schemes that sign only the body) and the event type. A body that cannot be filed normally is
kept quarantined with its bytes rather than refused: the provider would retry a refusal
forever, and the bytes are evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import msgspec

from foundation import excerpt
from reconciliation.notifications import InboundDelivery, stored_delivery_id
from upstream import VerifiedSignature

#: Request headers worth keeping with the row: enough to re-verify a signature later and to
#: trace the delivery, nothing that could carry a credential of ours.
KEPT_HEADERS: Final = (
    "content-type",
    "user-agent",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "x-request-id",
    "x-forwarded-for",
)
#: Why a body nested deeper than the JSON decoders go is quarantined.
TOO_DEEP: Final = "body is nested too deeply to read (about a thousand levels or more)"
#: Longest event type the inbox column holds.
MAX_EVENT_TYPE_LENGTH: Final = 64


class _Envelope(msgspec.Struct):
    """The two fields the inbox files a delivery by; the rest of the body is validated as JSON
    but not built into objects (the processor reads it later). The event type is read under the
    names of the built-in payload shapes (upstream.webhooks.payloads): `event`, `type`,
    `eventType`; the processor sets it for any other shape once it has read the body."""

    id: object = None
    event: object = None
    type: object = None
    eventType: object = None  # noqa: N815 - the member's name on the wire


_decoder: Final = msgspec.json.Decoder(_Envelope)
#: The envelope of a body that is not a JSON object: nothing read from it.
_NOTHING: Final = _Envelope()
#: KEPT_HEADERS as a set, for the per-header test.
_KEPT: Final = frozenset(KEPT_HEADERS)


def build_delivery(
    *,
    verified: VerifiedSignature,
    body: bytes,
    headers: Mapping[str, str],
    scheme: str,
    signature_header: str,
    received_at: datetime,
) -> InboundDelivery:
    """The record to commit for a verified delivery (pending, or quarantined with a reason)."""
    body_sha256 = hashlib.sha256(body).hexdigest()
    reason: str | None = None
    try:
        envelope = _decoder.decode(body)
    except msgspec.ValidationError as exc:
        envelope, reason = _NOTHING, _not_an_envelope(body, exc)
    except msgspec.DecodeError as exc:
        envelope, reason = _NOTHING, f"body is not valid JSON ({exc})"
    except ValueError as exc:
        # Invalid UTF-8 inside a member the envelope reads (`"event": "PAYMENT_\xc3("`) is a
        # UnicodeDecodeError, no DecodeError: signed, so kept and quarantined, never a 500 the
        # provider would retry forever.
        envelope, reason = _NOTHING, f"body is not valid JSON text ({excerpt(str(exc), 120)})"
    except RecursionError:
        # msgspec (and the standard library) stop at about a thousand levels; such a body is
        # signed and so is kept, quarantined, rather than answered with a 500 the provider
        # would retry forever.
        envelope, reason = _NOTHING, TOO_DEEP

    delivery_id = verified.delivery_id or _body_id(envelope.id)
    if delivery_id is None:
        delivery_id = "sha256:" + body_sha256
        reason = reason or 'body carries no delivery id (no "id" field)'

    event_type = envelope.event
    if event_type is None:
        event_type = envelope.type if envelope.type is not None else envelope.eventType
    if not isinstance(event_type, str):
        event_type = None
    elif len(event_type) > MAX_EVENT_TYPE_LENGTH or "\x00" in event_type:
        # A NUL cannot be stored in a text column; neither can an overlong type.
        reason = reason or f"event type is not a name of at most {MAX_EVENT_TYPE_LENGTH} characters"
        event_type = None

    kept = {
        name: value for name, value in headers.items() if name in _KEPT or name == signature_header
    }
    return InboundDelivery(
        delivery_id=stored_delivery_id(delivery_id),
        body=body,
        headers=kept,
        scheme=scheme,
        event_type=event_type,
        received_at=received_at,
        quarantine_reason=reason,
        body_sha256=body_sha256,
    )


def _body_id(value: object) -> str | None:
    if isinstance(value, str) and value and "\x00" not in value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _not_an_envelope(body: bytes, exc: msgspec.ValidationError) -> str:
    """The quarantine reason of a body the envelope refused: a document that is no object, or
    a member the envelope reads holding what it cannot (`"event": 1e999999999999`, past any
    float)."""
    try:
        value: Any = msgspec.json.decode(body)
    except RecursionError:
        return "body is JSON but not an object (a document nested too deeply to read)"
    except (msgspec.MsgspecError, ValueError):
        return f"body holds a value recon cannot read ({excerpt(str(exc), 120)})"
    if isinstance(value, dict):
        return f"body holds a value recon cannot read ({excerpt(str(exc), 120)})"
    return f"body is JSON but not an object (a {type(value).__name__})"
