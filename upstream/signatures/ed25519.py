"""Standard Webhooks `v1a`: an Ed25519 signature over `id.timestamp.body`.

The "secrets" here are public keys: a receiver can verify but never sign, so a leaked receiver
configuration cannot forge deliveries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from upstream.signatures.headers import TIMESTAMP_HEADER, read_signed_message
from upstream.signatures.verification import (
    BAD_SIGNATURE,
    SignatureError,
    VerifiedSignature,
    check_timestamp,
)


class Ed25519Verifier:
    """Accepts a delivery whose `v1a` signature verifies under any of the public keys."""

    scheme = "ed25519"

    def __init__(self, keys: Sequence[Ed25519PublicKey], tolerance_seconds: int) -> None:
        self._keys = tuple(keys)
        self._tolerance = tolerance_seconds

    @property
    def key_count(self) -> int:
        return len(self._keys)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> VerifiedSignature:
        message = read_signed_message(headers, body, "v1a", self.scheme)
        for key in self._keys:
            for offered in message.signatures:
                try:
                    key.verify(offered, message.signed_bytes)
                except InvalidSignature:
                    continue
                check_timestamp(message.signed_at, now, self._tolerance, TIMESTAMP_HEADER)
                return VerifiedSignature(message.delivery_id, message.signed_at)
        raise SignatureError(
            BAD_SIGNATURE,
            "no v1a signature verifies under an accepted public key: check the webhook's key "
            "(`recon webhooks list`, RECON_WEBHOOK_SECRETS)",
            keys_tried=len(self._keys),
        )
