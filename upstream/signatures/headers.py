"""Reading the `webhook-*` headers shared by the two Standard Webhooks schemes (v1 and v1a)."""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from typing import Final, NamedTuple

from upstream.signatures.verification import BAD_SIGNATURE, SignatureError, read_unix_seconds

#: The three headers Standard Webhooks puts on every delivery.
ID_HEADER: Final = "webhook-id"
TIMESTAMP_HEADER: Final = "webhook-timestamp"
SIGNATURE_HEADER: Final = "webhook-signature"


class SignedMessage(NamedTuple):
    """The id, the timestamp, what was signed, and the offered signatures.

    What was signed is `prefix` (`id.timestamp.`) followed by `body`, kept in two parts: an
    HMAC takes them one after the other, so the body (the bulk) is never copied to join them.
    A named tuple rather than a frozen dataclass: it is built on every delivery, and a frozen
    dataclass's constructor costs a microsecond of the receiver's budget.
    """

    delivery_id: str
    signed_at: int
    prefix: bytes
    body: bytes
    signatures: tuple[bytes, ...]

    @property
    def signed_bytes(self) -> bytes:
        """The signed message in one piece (for Ed25519, which takes nothing else)."""
        return self.prefix + self.body


def read_signed_message(
    headers: Mapping[str, str], body: bytes, version: str, scheme: str
) -> SignedMessage:
    """Collect what a Standard Webhooks signature covers, or refuse with what is missing.

    Headers arrive decoded as latin-1, so encoding them back the same way gives the exact bytes
    the sender signed. Signatures of other versions (a `v1a` beside a `v1` during a migration)
    are skipped, not refused.
    """
    delivery_id = headers.get(ID_HEADER)
    timestamp = headers.get(TIMESTAMP_HEADER)
    signature = headers.get(SIGNATURE_HEADER)
    if not delivery_id or not timestamp or not signature:
        raise _missing(delivery_id, timestamp, signature, scheme)
    signed_at = read_unix_seconds(timestamp, TIMESTAMP_HEADER)
    offered = []
    prefix = version + ","
    for part in signature.split(" "):
        if part.startswith(prefix):
            try:
                # base64.b64decode(validate=True) is this call behind a Python wrapper.
                offered.append(binascii.a2b_base64(part[len(prefix) :], strict_mode=True))
            except (binascii.Error, ValueError):
                continue
    if not offered:
        raise SignatureError(
            BAD_SIGNATURE,
            f"{SIGNATURE_HEADER} carries no readable {version} signature "
            f"(RECON_SIGNATURE_SCHEME={scheme})",
        )
    signed_prefix = f"{delivery_id}.{timestamp}.".encode("latin-1")
    return SignedMessage(delivery_id, signed_at, signed_prefix, body, tuple(offered))


def _missing(
    delivery_id: str | None, timestamp: str | None, signature: str | None, scheme: str
) -> SignatureError:
    named = (ID_HEADER, delivery_id), (TIMESTAMP_HEADER, timestamp), (SIGNATURE_HEADER, signature)
    missing = ", ".join(name for name, value in named if not value)
    return SignatureError(
        BAD_SIGNATURE,
        f"missing {missing} header(s): this receiver expects Standard Webhooks signatures "
        f"(RECON_SIGNATURE_SCHEME={scheme})",
    )
