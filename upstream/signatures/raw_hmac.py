"""Raw-body HMAC: SHA-256 or SHA-512 of the body alone, hex or base64, in one named header.

Many payment providers sign this way. Nothing but the body is signed, so there is no timestamp
to check: replays are absorbed by the inbox's durable deduplication instead, and the delivery id
is read from the verified body.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping, Sequence
from typing import Final

from upstream.signatures.verification import BAD_SIGNATURE, SignatureError, VerifiedSignature

#: RECON_SIGNATURE_SCHEME value -> (digest, encoding).
RAW_HMAC_SCHEMES: Final[dict[str, tuple[str, str]]] = {
    "hmac-sha256-hex": ("sha256", "hex"),
    "hmac-sha256-base64": ("sha256", "base64"),
    "hmac-sha512-hex": ("sha512", "hex"),
    "hmac-sha512-base64": ("sha512", "base64"),
}

#: What a body-only signature proves beyond "genuine": nothing (the id comes from the body).
_BODY_ONLY: Final = VerifiedSignature(delivery_id=None, signed_at=None)


class RawHmacVerifier:
    """Accepts a delivery whose body HMAC, in the configured header, matches any key.

    Each key's HMAC state is made once and copied per delivery, so the key is not set up again
    for every delivery (see StandardVerifier).
    """

    def __init__(self, scheme: str, header: str, keys: Sequence[bytes]) -> None:
        digest_name, encoding = RAW_HMAC_SCHEMES[scheme]
        self._scheme = scheme
        self._digest_name = digest_name
        self._encoding = encoding
        self._header = header.lower()
        self._display_header = header
        self._keyed = tuple(hmac.new(key, digestmod=digest_name) for key in keys)

    @property
    def scheme(self) -> str:
        return self._scheme

    @property
    def key_count(self) -> int:
        return len(self._keyed)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> VerifiedSignature:
        value = headers.get(self._header, "").strip()
        if not value:
            raise SignatureError(
                BAD_SIGNATURE,
                f"missing {self._display_header} header: this receiver expects a raw-body HMAC "
                f"(RECON_SIGNATURE_SCHEME={self._scheme}, RECON_SIGNATURE_HEADER)",
            )
        # Some providers prefix the algorithm ("sha256=..."); the digest itself is what counts.
        value = value.removeprefix(self._digest_name + "=")
        offered = self._decode(value)
        for keyed in self._keyed:
            mac = keyed.copy()
            mac.update(body)
            if hmac.compare_digest(mac.digest(), offered):
                return _BODY_ONLY
        raise SignatureError(
            BAD_SIGNATURE,
            f"the {self._display_header} HMAC matches no accepted secret: check the webhook's "
            "secret and RECON_SIGNATURE_SCHEME",
            keys_tried=len(self._keyed),
        )

    def _decode(self, value: str) -> bytes:
        try:
            if self._encoding == "hex":
                return bytes.fromhex(value)
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise SignatureError(
                BAD_SIGNATURE,
                f"{self._display_header} is not {self._encoding} "
                f"(RECON_SIGNATURE_SCHEME={self._scheme})",
            ) from None
