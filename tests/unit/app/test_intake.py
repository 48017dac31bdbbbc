"""Filing a verified delivery: what is read from the body, and when it is quarantined instead."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from app.receiver.intake import build_delivery
from upstream.signatures import VerifiedSignature

AT = datetime(2026, 11, 22, tzinfo=UTC)
SIGNED = VerifiedSignature(delivery_id="msg_1", signed_at=1)
BODY_ONLY = VerifiedSignature(delivery_id=None, signed_at=None)


def build(body: bytes, verified: VerifiedSignature = SIGNED, **headers: str):  # type: ignore[no-untyped-def]
    return build_delivery(
        verified=verified,
        body=body,
        headers={"content-type": "application/json", **headers},
        scheme="standard",
        signature_header="x-signature",
        received_at=AT,
    )


def test_event_type_and_header_id() -> None:
    d = build(b'{"id":"evt_9","event":"PAYMENT_RECEIVED"}')
    assert (d.delivery_id, d.event_type, d.quarantine_reason) == ("msg_1", "PAYMENT_RECEIVED", None)
    assert d.body_sha256 == hashlib.sha256(d.body).hexdigest()


def test_body_signed_schemes_take_the_id_from_the_body() -> None:
    assert build(b'{"id":"evt_9","event":"X"}', BODY_ONLY).delivery_id == "evt_9"
    assert build(b'{"id":42,"event":"X"}', BODY_ONLY).delivery_id == "42"


def test_malformed_json_is_quarantined_with_its_bytes() -> None:
    body = b'{"id":"evt_9","event":'
    d = build(body)
    assert d.body == body
    assert d.quarantine_reason is not None
    assert d.quarantine_reason.startswith("body is not valid JSON")
    assert d.delivery_id == "msg_1"


def test_json_that_is_not_an_object_is_quarantined() -> None:
    d = build(b"[1, 2]")
    assert d.quarantine_reason == "body is JSON but not an object (a list)"
    assert d.event_type is None


def test_no_id_anywhere_is_quarantined_under_the_body_hash() -> None:
    body = b'{"event":"X"}'
    d = build(body, BODY_ONLY)
    assert d.delivery_id == "sha256:" + hashlib.sha256(body).hexdigest()
    assert d.quarantine_reason == 'body carries no delivery id (no "id" field)'


def test_overlong_event_type_is_not_stored() -> None:
    d = build(b'{"event":"' + b"E" * 65 + b'"}')
    assert d.event_type is None
    assert d.quarantine_reason == "event type is not a name of at most 64 characters"


def test_nul_characters_never_reach_a_text_column() -> None:
    d = build(b'{"id":"a\\u0000b","event":"X\\u0000"}', BODY_ONLY)
    assert d.event_type is None
    assert d.delivery_id.startswith("sha256:")
    assert d.quarantine_reason is not None


def test_overlong_id_is_stored_by_hash_and_stays_pending() -> None:
    long_id = "x" * 300
    d = build(b'{"event":"X"}', VerifiedSignature(delivery_id=long_id, signed_at=1))
    assert d.delivery_id == "sha256:" + hashlib.sha256(long_id.encode()).hexdigest()
    assert d.quarantine_reason is None


def test_only_headers_that_matter_are_kept() -> None:
    d = build(
        b"{}",
        **{
            "webhook-id": "msg_1",
            "webhook-signature": "v1,abc",
            "x-signature": "ff",
            "authorization": "Bearer something",
            "cookie": "session=1",
        },
    )
    assert d.headers == {
        "content-type": "application/json",
        "webhook-id": "msg_1",
        "webhook-signature": "v1,abc",
        "x-signature": "ff",
    }
