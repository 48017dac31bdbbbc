"""RECON_SIGNATURE_SCHEME -> a Verifier holding every accepted key in its prepared form."""

from __future__ import annotations

from collections.abc import Sequence

from foundation import Secret
from upstream.signatures.ed25519 import Ed25519Verifier
from upstream.signatures.keys import (
    KeyFormatError,
    ed25519_public_key,
    raw_hmac_key,
    standard_hmac_keys,
)
from upstream.signatures.raw_hmac import RAW_HMAC_SCHEMES, RawHmacVerifier
from upstream.signatures.standard import StandardVerifier
from upstream.signatures.verification import Verifier


def key_problem(scheme: str, secret: Secret) -> str | None:
    """Why `secret` cannot be used with `scheme`, or None when it can (never shows the value)."""
    try:
        _prepare(scheme, secret.reveal())
    except KeyFormatError as exc:
        return str(exc)
    return None


def make_verifier(
    scheme: str, *, secrets: Sequence[Secret], tolerance_seconds: int, header: str
) -> Verifier:
    """A verifier for `scheme` accepting every one of `secrets`.

    Keys are decoded once here, not per delivery. Raises KeyFormatError if a secret does not
    fit the scheme; filter with `key_problem` first when some may not.
    """
    if scheme == "standard":
        keys = [key for s in secrets for key in standard_hmac_keys(s.reveal())]
        return StandardVerifier(keys, tolerance_seconds, secret_count=len(secrets))
    if scheme == "ed25519":
        return Ed25519Verifier([ed25519_public_key(s.reveal()) for s in secrets], tolerance_seconds)
    if scheme in RAW_HMAC_SCHEMES:
        return RawHmacVerifier(scheme, header, [raw_hmac_key(s.reveal()) for s in secrets])
    raise ValueError(f"unknown signature scheme {scheme!r}")


def _prepare(scheme: str, text: str) -> object:
    if scheme == "standard":
        return standard_hmac_keys(text)
    if scheme == "ed25519":
        return ed25519_public_key(text)
    return raw_hmac_key(text)
