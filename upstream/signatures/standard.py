"""Standard Webhooks `v1`: base64 HMAC-SHA256 over `id.timestamp.body`.

The key is a `whsec_` secret's decoded bytes or a plain secret's text (`upstream.signatures.keys`);
one secret may yield two candidate keys, so the verifier counts secrets and keys apart.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence

from upstream.signatures.headers import TIMESTAMP_HEADER, read_signed_message
from upstream.signatures.verification import (
    BAD_SIGNATURE,
    SignatureError,
    VerifiedSignature,
    check_timestamp,
)


class StandardVerifier:
    """Accepts a delivery whose `v1` signature matches any of the keys.

    Each key's HMAC state is made once, with the key already absorbed, and copied per delivery:
    a fresh HMAC per delivery would set the key up again every time (two hash blocks and a
    digest lookup), a third of what verifying a small delivery costs.
    """

    scheme = "standard"

    def __init__(
        self, keys: Sequence[bytes], tolerance_seconds: int, *, secret_count: int | None = None
    ) -> None:
        self._keyed = tuple(hmac.new(key, digestmod="sha256") for key in keys)
        self._tolerance = tolerance_seconds
        self._secret_count = len(self._keyed) if secret_count is None else secret_count

    @property
    def key_count(self) -> int:
        return self._secret_count

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> VerifiedSignature:
        message = read_signed_message(headers, body, "v1", self.scheme)
        for keyed in self._keyed:
            mac = keyed.copy()
            mac.update(message.prefix)
            mac.update(body)
            expected = mac.digest()
            for offered in message.signatures:
                if hmac.compare_digest(expected, offered):
                    check_timestamp(message.signed_at, now, self._tolerance, TIMESTAMP_HEADER)
                    return VerifiedSignature(message.delivery_id, message.signed_at)
        raise SignatureError(
            BAD_SIGNATURE,
            "no v1 signature matches an accepted secret: check the webhook's secret "
            "(`recon webhooks list`, RECON_WEBHOOK_SECRETS)",
            keys_tried=self._secret_count,
        )
