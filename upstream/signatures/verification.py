"""What every signature scheme promises the receiver, and how it says no."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple, Protocol

#: Refusal outcome: the delivery is not signed by anyone holding an accepted secret.
BAD_SIGNATURE: Final = "bad_signature"
#: Refusal outcome: the signature is genuine but its timestamp is outside the tolerance.
STALE_TIMESTAMP: Final = "stale_timestamp"


class SignatureError(Exception):
    """The delivery must be refused with 401; `reason` is safe to show the sender and to log.

    A reason names headers and numbers, never a secret, a signature value or the body. How many
    keys were tried (`keys_tried`) is for the operator's log (`logged`) only: told to a sender,
    who may be anyone, it says when a rotation is in progress.
    """

    def __init__(self, outcome: str, reason: str, *, keys_tried: int | None = None) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.keys_tried = keys_tried

    @property
    def logged(self) -> str:
        """The reason as the log keeps it: with the number of keys tried, when there is one."""
        if self.keys_tried is None:
            return self.reason
        return f"{self.reason} ({self.keys_tried} accepted key(s) tried)"


class VerifiedSignature(NamedTuple):
    """What a verified signature tells us besides "genuine".

    `delivery_id` is None for schemes that sign only the body (raw HMAC): the receiver then
    reads the id from the verified body. `signed_at` is the signed Unix timestamp, if any.
    Immutable as a named tuple rather than a frozen dataclass: one is made per delivery, and a
    frozen dataclass's constructor costs several times as much.
    """

    delivery_id: str | None
    signed_at: int | None


class Verifier(Protocol):
    """Checks one delivery against every currently accepted key."""

    @property
    def scheme(self) -> str:
        """The RECON_SIGNATURE_SCHEME value this verifier implements."""
        ...

    @property
    def key_count(self) -> int:
        """How many keys are accepted; zero means every delivery will be refused."""
        ...

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> VerifiedSignature:
        """Return what the signature proves, or raise SignatureError.

        `headers` has lower-case names; `body` is exactly the bytes received; `now` is Unix
        seconds, passed in so tests can move the clock.
        """
        ...


def check_timestamp(signed_at: int, now: float, tolerance_seconds: int, header: str) -> None:
    """Refuse a timestamp too far from our clock in either direction.

    Too old is a replay or a very late retry; too new is a sender whose clock runs ahead. Both
    directions get the same tolerance, and the reason says which way and by how much.
    """
    skew = now - signed_at
    if abs(skew) <= tolerance_seconds:
        return
    direction = "in the past" if skew > 0 else "in the future"
    raise SignatureError(
        STALE_TIMESTAMP,
        f"{header} is {abs(int(skew))} s {direction}, outside the tolerance of "
        f"{tolerance_seconds} s: check the sender's clock (or RECON_SIGNATURE_TOLERANCE_SECONDS); "
        "a genuine delivery can be re-sent with a fresh timestamp",
    )


def read_unix_seconds(value: str, header: str) -> int:
    """A Unix-seconds header as an int, or a refusal that names the header."""
    if not value.isascii() or not value.isdigit() or len(value) > 12:
        raise SignatureError(BAD_SIGNATURE, f"{header} must be Unix seconds (digits only)")
    return int(value)
