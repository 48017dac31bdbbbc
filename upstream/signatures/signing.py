"""Our own signer, the mirror of the verifiers: for tests, the benchmark and `recon` tooling.

The receiver never signs; this exists so a benchmark can pre-sign deliveries and tests can craft
exact edge cases (a timestamp off by one second, a rotated secret) for every scheme.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from upstream.signatures.keys import ed25519_signing_key, raw_hmac_key, standard_hmac_key
from upstream.signatures.raw_hmac import RAW_HMAC_SCHEMES


def sign_delivery(
    scheme: str,
    secret: str,
    *,
    delivery_id: str,
    timestamp: int,
    body: bytes,
    header: str = "X-Signature",
) -> dict[str, str]:
    """The signature headers a sender using `scheme` and `secret` would put on `body`."""
    if scheme in ("standard", "ed25519"):
        signed = f"{delivery_id}.{timestamp}.".encode() + body
        if scheme == "standard":
            mac = hmac.new(standard_hmac_key(secret), signed, hashlib.sha256).digest()
            signature = "v1," + base64.b64encode(mac).decode()
        else:
            raw = ed25519_signing_key(secret).sign(signed)
            signature = "v1a," + base64.b64encode(raw).decode()
        return {
            "webhook-id": delivery_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }
    digest_name, encoding = RAW_HMAC_SCHEMES[scheme]
    digest = hmac.new(raw_hmac_key(secret), body, getattr(hashlib, digest_name)).digest()
    value = digest.hex() if encoding == "hex" else base64.b64encode(digest).decode()
    return {header: value}
