"""Signature schemes: genuine deliveries pass, anything else is refused with a reason.

Deliveries are signed three ways: by the official `standardwebhooks` package, by the sandbox's
signer (the provider stand-in) and by our own signer; the verifiers must agree with all three.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook as OfficialWebhook

from foundation import Secret
from sandbox.signing import public_key_text as sandbox_public_key
from sandbox.signing import sign as sandbox_sign
from upstream.signatures import BAD_SIGNATURE, STALE_TIMESTAMP, SignatureError, make_verifier
from upstream.signatures.factory import key_problem
from upstream.signatures.keys import new_secret, public_key_text
from upstream.signatures.signing import sign_delivery

NOW = 1_800_000_000
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
OTHER = "whsec_" + base64.b64encode(b"fedcba9876543210fedcba9876543210").decode()
BODY = json.dumps({"id": "evt_1", "event": "PAYMENT_RECEIVED", "data": {"amount": "1.50"}}).encode()
RAW_SCHEMES = ("hmac-sha256-hex", "hmac-sha256-base64", "hmac-sha512-hex", "hmac-sha512-base64")
ALL_SCHEMES = ("standard", "ed25519", *RAW_SCHEMES)


def verifier(scheme: str, *secrets: str, tolerance: int = 300, header: str = "X-Signature"):  # type: ignore[no-untyped-def]
    return make_verifier(
        scheme,
        secrets=[Secret(s) for s in secrets],
        tolerance_seconds=tolerance,
        header=header,
    )


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def test_official_package_signature_verifies() -> None:
    signed = OfficialWebhook(SECRET).sign("msg_1", datetime.fromtimestamp(NOW, UTC), BODY.decode())
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": signed}
    result = verifier("standard", SECRET).verify(headers, BODY, NOW)
    assert result.delivery_id == "msg_1"
    assert result.signed_at == NOW


def test_official_package_accepts_our_signer() -> None:
    """Our signer (used by the benchmark and tests) is Standard Webhooks as the package reads it."""
    import time

    now = int(time.time())
    headers = sign_delivery("standard", SECRET, delivery_id="msg_2", timestamp=now, body=BODY)
    assert OfficialWebhook(SECRET).verify(BODY, headers) == json.loads(BODY)


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
def test_sandbox_signed_delivery_verifies(scheme: str) -> None:
    registered = new_secret(scheme)
    headers = sandbox_sign(scheme, registered, "evt_1", NOW, BODY, "X-Signature")
    accepted = registered
    if scheme == "ed25519":
        # Configured as the public key, the form a receiver gets for a webhook made elsewhere.
        accepted = sandbox_public_key(registered)
        assert accepted == public_key_text(registered)
    result = verifier(scheme, accepted).verify(lower(headers), BODY, NOW)
    assert result.delivery_id == ("evt_1" if scheme in ("standard", "ed25519") else None)


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
def test_one_changed_byte_is_refused(scheme: str) -> None:
    secret = new_secret(scheme)
    headers = sign_delivery(scheme, secret, delivery_id="evt_1", timestamp=NOW, body=BODY)
    tampered = BODY.replace(b"1.50", b"1.51")
    with pytest.raises(SignatureError) as refused:
        verifier(scheme, secret).verify(lower(headers), tampered, NOW)
    assert refused.value.outcome == BAD_SIGNATURE


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
def test_any_of_several_secrets_is_accepted(scheme: str) -> None:
    old, new = new_secret(scheme), new_secret(scheme)
    check = verifier(scheme, new, old)
    for secret in (old, new):
        headers = sign_delivery(scheme, secret, delivery_id="e", timestamp=NOW, body=BODY)
        check.verify(lower(headers), BODY, NOW)
    stranger = sign_delivery(scheme, new_secret(scheme), delivery_id="e", timestamp=NOW, body=BODY)
    with pytest.raises(SignatureError):
        check.verify(lower(stranger), BODY, NOW)


def test_rotation_header_with_several_signatures() -> None:
    mine = sign_delivery("standard", SECRET, delivery_id="e", timestamp=NOW, body=BODY)
    theirs = sign_delivery("standard", OTHER, delivery_id="e", timestamp=NOW, body=BODY)
    headers = {
        **mine,
        "webhook-signature": f"{theirs['webhook-signature']} v1a,AAAA {mine['webhook-signature']}",
    }
    assert verifier("standard", SECRET).verify(headers, BODY, NOW).delivery_id == "e"


@pytest.mark.parametrize("scheme", ["standard", "ed25519"])
@pytest.mark.parametrize(("skew", "direction"), [(-301, "in the past"), (301, "in the future")])
def test_timestamp_outside_tolerance_both_ways(scheme: str, skew: int, direction: str) -> None:
    secret = new_secret(scheme)
    headers = sign_delivery(scheme, secret, delivery_id="e", timestamp=NOW + skew, body=BODY)
    with pytest.raises(SignatureError) as refused:
        verifier(scheme, secret, tolerance=300).verify(headers, BODY, NOW)
    assert refused.value.outcome == STALE_TIMESTAMP
    assert f"301 s {direction}" in refused.value.reason
    assert "tolerance of 300 s" in refused.value.reason


@pytest.mark.parametrize("skew", [-300, 300])
def test_timestamp_at_the_edge_of_tolerance_passes(skew: int) -> None:
    headers = sign_delivery("standard", SECRET, delivery_id="e", timestamp=NOW + skew, body=BODY)
    verifier("standard", SECRET, tolerance=300).verify(headers, BODY, NOW)


def test_forged_signature_with_old_timestamp_is_a_bad_signature_not_stale() -> None:
    """ "Stale" is only said of genuine signatures, so it always means a clock or replay issue."""
    headers = sign_delivery("standard", OTHER, delivery_id="e", timestamp=NOW - 9999, body=BODY)
    with pytest.raises(SignatureError) as refused:
        verifier("standard", SECRET).verify(headers, BODY, NOW)
    assert refused.value.outcome == BAD_SIGNATURE


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "missing webhook-id, webhook-timestamp, webhook-signature header(s)"),
        ({"webhook-id": "e", "webhook-timestamp": str(NOW)}, "missing webhook-signature"),
        (
            {"webhook-id": "e", "webhook-timestamp": "soon", "webhook-signature": "v1,AAAA"},
            "webhook-timestamp must be Unix seconds",
        ),
        (
            {"webhook-id": "e", "webhook-timestamp": str(NOW), "webhook-signature": "v2,AAAA"},
            "carries no readable v1 signature",
        ),
    ],
)
def test_malformed_standard_headers_say_what_is_wrong(
    headers: dict[str, str], expected: str
) -> None:
    with pytest.raises(SignatureError) as refused:
        verifier("standard", SECRET).verify(headers, BODY, NOW)
    assert refused.value.outcome == BAD_SIGNATURE
    assert expected in refused.value.reason


def test_raw_hmac_uses_the_configured_header() -> None:
    secret = new_secret("hmac-sha512-hex")
    headers = sign_delivery(
        "hmac-sha512-hex",
        secret,
        delivery_id="e",
        timestamp=NOW,
        body=BODY,
        header="X-Provider-Sig",
    )
    check = verifier("hmac-sha512-hex", secret, header="X-Provider-Sig")
    check.verify(lower(headers), BODY, NOW)
    with pytest.raises(SignatureError) as refused:
        verifier("hmac-sha512-hex", secret).verify(lower(headers), BODY, NOW)
    assert "missing X-Signature header" in refused.value.reason


def test_raw_hmac_has_no_timestamp_to_check() -> None:
    secret = new_secret("hmac-sha256-hex")
    headers = sign_delivery("hmac-sha256-hex", secret, delivery_id="e", timestamp=0, body=BODY)
    assert verifier("hmac-sha256-hex", secret).verify(lower(headers), BODY, NOW).signed_at is None


def test_raw_hmac_refuses_a_signature_in_the_wrong_encoding() -> None:
    secret = new_secret("hmac-sha256-hex")
    headers = sign_delivery("hmac-sha256-base64", secret, delivery_id="e", timestamp=0, body=BODY)
    with pytest.raises(SignatureError) as refused:
        verifier("hmac-sha256-hex", secret).verify(lower(headers), BODY, NOW)
    assert "is not hex" in refused.value.reason


def test_refusal_reasons_never_show_a_secret_or_signature() -> None:
    headers = sign_delivery("standard", OTHER, delivery_id="e", timestamp=NOW, body=BODY)
    with pytest.raises(SignatureError) as refused:
        verifier("standard", SECRET).verify(headers, BODY, NOW)
    reason = refused.value.reason
    for leaked in (SECRET, SECRET[6:], headers["webhook-signature"], BODY.decode()):
        assert leaked not in reason


def test_no_keys_refuses_everything() -> None:
    headers = sign_delivery("standard", SECRET, delivery_id="e", timestamp=NOW, body=BODY)
    with pytest.raises(SignatureError) as refused:
        verifier("standard").verify(headers, BODY, NOW)
    assert "(0 accepted key(s) tried)" in refused.value.logged
    assert "0 accepted" not in refused.value.reason


@pytest.mark.parametrize(
    ("scheme", "secret", "problem"),
    [
        ("standard", "whsec_***not-base64***", "not valid base64"),
        ("ed25519", SECRET, "needs a whpk_"),
        ("ed25519", "whpk_" + base64.b64encode(b"short").decode(), "32-byte Ed25519 public key"),
        ("hmac-sha256-hex", "", "empty"),
    ],
)
def test_unusable_key_is_explained(scheme: str, secret: str, problem: str) -> None:
    found = key_problem(scheme, Secret(secret))
    assert found is not None
    assert problem in found
    assert secret not in found or not secret


@pytest.mark.parametrize("scheme", ALL_SCHEMES)
def test_generated_secrets_are_usable_and_distinct(scheme: str) -> None:
    first, second = new_secret(scheme), new_secret(scheme)
    assert first != second
    assert key_problem(scheme, Secret(first)) is None
    assert first.startswith("whsk_" if scheme == "ed25519" else "whsec_")


@pytest.mark.parametrize("scheme", ["standard", *RAW_SCHEMES])
def test_keyed_hmac_state_is_not_spent_by_earlier_deliveries(scheme: str) -> None:
    """Each key's HMAC state is prepared once and copied per delivery: a delivery verified (or
    refused) before must leave nothing behind in it, whichever key matched."""
    old, new = new_secret(scheme), new_secret(scheme)
    check = verifier(scheme, old, new)
    bodies = [BODY, b'{"id":"evt_2"}', BODY + b" ", b"{}" * 5000]
    for number, body in enumerate(bodies * 2):
        secret = (old, new)[number % 2]
        headers = sign_delivery(scheme, secret, delivery_id=f"e{number}", timestamp=NOW, body=body)
        check.verify(lower(headers), body, NOW)
        with pytest.raises(SignatureError):
            check.verify(lower(headers), body + b"x", NOW)
        check.verify(lower(headers), body, NOW)
