"""The textual forms of webhook secrets and keys, and how new ones are generated.

Forms (see docs/decisions.md, "Webhook receiver"):
- `whsec_<base64>`: a Standard Webhooks v1 secret; the HMAC key is the decoded bytes.
- any other text (the company spec says only "string"; a dashboard may hand out a plain
  password-like secret): under Standard Webhooks the HMAC key is its UTF-8 bytes, as a provider
  signing with a plain secret does. When the text is also valid base64 the decoded bytes are
  accepted as well, because the official Standard Webhooks library reads a bare secret that way;
  both keys come from the one secret, so accepting both admits no other sender.
- `whsk_<base64 32-byte seed>`: an Ed25519 signing key; recon registers it when the scheme is
  `ed25519` and verifies with the public key derived from it.
- `whpk_<base64 32-byte public key>`: an Ed25519 public key, for a webhook registered outside
  recon (in RECON_WEBHOOK_SECRETS).
- raw-body HMAC schemes key the HMAC with the secret's UTF-8 bytes, whole, prefix included.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

#: Prefix of Standard Webhooks HMAC secrets.
STANDARD_SECRET_PREFIX: Final = "whsec_"
#: Prefix of an Ed25519 signing key (private seed) in text form.
ED25519_SIGNING_PREFIX: Final = "whsk_"
#: Prefix of an Ed25519 public key in text form.
ED25519_PUBLIC_PREFIX: Final = "whpk_"
#: Random bytes in a generated secret: 256 bits, the HMAC-SHA256 block-safe key length.
GENERATED_SECRET_BYTES: Final = 32


class KeyFormatError(ValueError):
    """A configured or stored secret does not have the form the scheme needs."""


def _b64(text: str, what: str) -> bytes:
    # Padding is optional in the wild (the official package tolerates its absence too).
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise KeyFormatError(f"{what} is not valid base64") from None
    if not raw:
        raise KeyFormatError(f"{what} is empty")
    return raw


def standard_hmac_key(secret: str) -> bytes:
    """The key a sender signs `v1` with: a `whsec_` secret's decoded bytes, else the UTF-8 text.

    A `whsec_` secret whose body is not base64 is refused rather than used as text: the prefix
    promises base64, so a failure to decode it is a copy error worth stopping for.
    """
    if secret.startswith(STANDARD_SECRET_PREFIX):
        return _b64(secret.removeprefix(STANDARD_SECRET_PREFIX), "the whsec_ secret")
    return raw_hmac_key(secret)


def standard_hmac_keys(secret: str) -> tuple[bytes, ...]:
    """Every key a `v1` signature made with `secret` may use (see the module's forms)."""
    first = standard_hmac_key(secret)
    if secret.startswith(STANDARD_SECRET_PREFIX):
        return (first,)
    try:
        decoded = _b64(secret, "the secret")
    except KeyFormatError:
        return (first,)
    return (first, decoded)


def raw_hmac_key(secret: str) -> bytes:
    """The HMAC key of a raw-body scheme: the secret text itself, as many providers use it."""
    if not secret:
        raise KeyFormatError("the secret is empty")
    return secret.encode()


def ed25519_public_key(secret: str) -> Ed25519PublicKey:
    """The public key that verifies `v1a` signatures, from a `whpk_` key or a `whsk_` seed."""
    if secret.startswith(ED25519_PUBLIC_PREFIX):
        raw = _b64(secret.removeprefix(ED25519_PUBLIC_PREFIX), "the whpk_ key")
        if len(raw) != 32:
            raise KeyFormatError("a whpk_ key must carry a 32-byte Ed25519 public key")
        return Ed25519PublicKey.from_public_bytes(raw)
    if secret.startswith(ED25519_SIGNING_PREFIX):
        return ed25519_signing_key(secret).public_key()
    raise KeyFormatError(
        "the ed25519 scheme needs a whpk_<base64 public key> (or the whsk_ signing key recon "
        "registered)"
    )


def ed25519_signing_key(secret: str) -> Ed25519PrivateKey:
    """The private key of a `whsk_` seed (for our own signer and for deriving the public key)."""
    raw = _b64(secret.removeprefix(ED25519_SIGNING_PREFIX), "the whsk_ key")
    if len(raw) not in (32, 64):
        raise KeyFormatError("a whsk_ key must carry a 32-byte Ed25519 seed")
    return Ed25519PrivateKey.from_private_bytes(raw[:32])


def public_key_text(secret: str) -> str:
    """`whpk_<base64>` for a key: what to put in RECON_WEBHOOK_SECRETS on another receiver."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = ed25519_public_key(secret).public_bytes(Encoding.Raw, PublicFormat.Raw)
    return ED25519_PUBLIC_PREFIX + base64.b64encode(raw).decode()


def new_secret(scheme: str) -> str:
    """A fresh secret to register for `scheme`: a whsk_ seed for ed25519, whsec_ otherwise."""
    raw = base64.b64encode(secrets.token_bytes(GENERATED_SECRET_BYTES)).decode()
    if scheme == "ed25519":
        return ED25519_SIGNING_PREFIX + raw
    return STANDARD_SECRET_PREFIX + raw
