"""Webhook signatures: Standard Webhooks (``v1`` HMAC, ``v1a`` Ed25519) and raw-body HMACs.

The scheme is sandbox configuration (docs/decisions.md, signatures); the secret is the one the
webhook was registered with, and any non-empty string is one (the company spec says only
"string"). Key handling:

- ``standard``: for ``whsec_<base64>`` the HMAC key is the decoded bytes, exactly as the
  ``standardwebhooks`` package reads it. Any other string (a plain dashboard password, a bare
  base64 string, even ``whsec_`` followed by something that is not base64) is used as its UTF-8
  bytes, whole: what a provider that stores "a string" and signs with it would do.
- ``ed25519``: a ``whsk_<base64 32-byte seed>`` secret is used as the private key seed; any
  other secret is hashed (SHA-256) into a seed. Receivers verify with ``public_key_text``
  (``whpk_...``).
- ``hmac-*``: the HMAC key is the secret's UTF-8 bytes; the signature of the raw body goes in one
  header (default ``X-Signature``) as hex or base64. No timestamp or id header is sent; the
  delivery id is the body's ``id``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


class SecretError(ValueError):
    """The registered secret cannot be used with the configured scheme."""


def _standard_key(secret: str) -> bytes:
    if secret.startswith("whsec_"):
        text = secret.removeprefix("whsec_").rstrip("=")
        text += "=" * (-len(text) % 4)  # unpadded base64 is accepted, as the reference library does
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if key:
            return key
    return secret.encode()


def _ed25519_key(secret: str) -> Ed25519PrivateKey:
    seed = hashlib.sha256(secret.encode()).digest()
    if secret.startswith("whsk_"):
        try:
            raw = base64.b64decode(secret.removeprefix("whsk_"), validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) in (32, 64):
            seed = raw[:32]
    return Ed25519PrivateKey.from_private_bytes(seed)


def check_secret(scheme: str, secret: str) -> None:
    """Refuse at registration what ``scheme`` cannot sign with: only an empty secret.

    Every non-empty string has a key under every scheme (see the module docstring), so the
    sandbox is never stricter than the spec's "string".
    """
    if not secret:
        raise SecretError(f"an empty secret cannot sign {scheme} deliveries")


def public_key_text(secret: str) -> str:
    """``whpk_<base64>``: what a receiver needs to verify ``v1a`` signatures."""
    raw = _ed25519_key(secret).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return "whpk_" + base64.b64encode(raw).decode()


def sign(
    scheme: str, secret: str, msg_id: str, timestamp: int, body: bytes, header_name: str
) -> dict[str, str]:
    """The headers that carry the signature of ``body`` under ``scheme``."""
    if scheme in ("standard", "ed25519"):
        signed = f"{msg_id}.{timestamp}.".encode() + body
        if scheme == "standard":
            mac = hmac.new(_standard_key(secret), signed, hashlib.sha256).digest()
            signature = "v1," + base64.b64encode(mac).decode()
        else:
            sig = _ed25519_key(secret).sign(signed)
            signature = "v1a," + base64.b64encode(sig).decode()
        return {
            "webhook-id": msg_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }
    algo, encoding = {
        "hmac-sha256-hex": (hashlib.sha256, "hex"),
        "hmac-sha256-base64": (hashlib.sha256, "base64"),
        "hmac-sha512-hex": (hashlib.sha512, "hex"),
        "hmac-sha512-base64": (hashlib.sha512, "base64"),
    }[scheme]
    digest = hmac.new(secret.encode(), body, algo).digest()
    value = digest.hex() if encoding == "hex" else base64.b64encode(digest).decode()
    return {header_name: value}
