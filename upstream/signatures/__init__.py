"""Webhook signature verification: one module per scheme behind one small interface.

`make_verifier` is the only place that maps RECON_SIGNATURE_SCHEME to an implementation; the
receiver only ever sees a `Verifier`. Every scheme verifies the exact raw bytes received, with
`hmac.compare_digest` (or Ed25519's own verification), and accepts any of several keys at once
so that rotation and RECON_WEBHOOK_SECRETS work side by side.
"""

from __future__ import annotations

from upstream.signatures.factory import make_verifier
from upstream.signatures.verification import (
    BAD_SIGNATURE,
    STALE_TIMESTAMP,
    SignatureError,
    VerifiedSignature,
    Verifier,
)

__all__ = [
    "BAD_SIGNATURE",
    "STALE_TIMESTAMP",
    "SignatureError",
    "VerifiedSignature",
    "Verifier",
    "make_verifier",
]
