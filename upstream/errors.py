"""One error model for both provider APIs.

The gateway answers failures with a problem envelope (`kind`, `status`, `code`, `message`,
`evidence`); the company API with `{success, message, data, timestamp}`. Callers should not care
which: they catch one of the classes below. Every message says what went wrong and what to do,
and is built only from the operation, the path and the provider's words, never from headers, so
no credential can reach `str(exc)` or `repr(exc)`.
"""

# The exception names are the ones the issue and its callers use (Unauthorized, Forbidden, ...);
# an "Error" suffix would only make them longer.
# ruff: noqa: N818

from __future__ import annotations

from dataclasses import dataclass

from upstream.wire.evidence import Evidence


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What is known about the failed call, for logging and storing without parsing messages.

    `operation` is our name for the call, `method` and `path` identify it (never a query string
    or a header), `http_status` is None when no response arrived, `kind`, `code` and
    `provider_message` are the provider's words, `evidence` its receipts.
    """

    operation: str | None = None
    method: str | None = None
    path: str | None = None
    http_status: int | None = None
    kind: str | None = None
    code: str | None = None
    provider_message: str | None = None
    evidence: tuple[Evidence, ...] = ()


class ProviderError(Exception):
    """Base of every failure raised by the upstream clients."""

    def __init__(self, message: str, info: CallInfo | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.info = info if info is not None else CallInfo()
        self.attempts = 1

    def __str__(self) -> str:
        if self.attempts > 1:
            return f"{self.message} (gave up after {self.attempts} attempts)"
        return self.message

    @property
    def operation(self) -> str | None:
        """Our name for the failed call."""
        return self.info.operation

    @property
    def http_status(self) -> int | None:
        """HTTP status of the refusal, None when no response arrived."""
        return self.info.http_status

    @property
    def code(self) -> str | None:
        """The provider's error code, when it sent one."""
        return self.info.code

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """Receipts the provider attached to the refusal."""
        return self.info.evidence


class Unauthorized(ProviderError):
    """The provider did not accept the credentials (401), or they cannot be sent at all.

    `local` is True when the request was never sent because the configured key or app id
    holds characters that cannot travel in an HTTP header (typically a stray space or newline).
    """

    def __init__(self, message: str, info: CallInfo | None = None, *, local: bool = False) -> None:
        super().__init__(message, info)
        self.local = local


class Forbidden(ProviderError):
    """The key is valid but lacks the capability the operation needs (403).

    `capability` names it when it can be derived from the operation, so the operator knows
    exactly what to ask the provider to grant.
    """

    def __init__(
        self, message: str, info: CallInfo | None = None, *, capability: str | None = None
    ) -> None:
        super().__init__(message, info)
        self.capability = capability


class InvalidInput(ProviderError):
    """The provider refused the request as malformed or not allowed (400)."""


class IdempotencyConflict(InvalidInput):
    """An Idempotency-Key was reused with different request material (400).

    The provider keeps the first material for a key; a second, different request under the
    same key is refused rather than silently answered with the first one's result.
    """


class NotFound(ProviderError):
    """A reference named in the request does not exist for this key's environment (404)."""


class Conflict(ProviderError):
    """The request conflicts with the resource's current state (409)."""


class StaleGuard(Conflict):
    """A lifecycle command carried a guard that is no longer current (409).

    Never retried automatically: read the endpoint again, decide again, and send a new command
    (which gets a new Idempotency-Key because its guard, and so its material, differs).
    """


class RateLimited(ProviderError):
    """The provider asked us to slow down (429); `retry_after` is in seconds."""

    def __init__(self, message: str, info: CallInfo | None = None, *, retry_after: float) -> None:
        super().__init__(message, info)
        self.retry_after = retry_after


class Unavailable(ProviderError):
    """The provider could not be reached or reported a fault (5xx, connection or timeout).

    `maybe_processed` is False only when we know the request never reached the provider
    (the connection was never made), which makes even an unprotected write safe to repeat.
    `retry_after` is the provider's Retry-After in seconds when its 5xx carried one (a 503
    that says when to come back), else None and the retry policy's own backoff applies.
    """

    def __init__(
        self,
        message: str,
        info: CallInfo | None = None,
        *,
        maybe_processed: bool = True,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, info)
        self.maybe_processed = maybe_processed
        self.retry_after = retry_after


class ProtocolError(ProviderError):
    """The provider answered with something we cannot read: bad JSON or an unexpected shape."""


class ResponseTooLarge(ProtocolError):
    """The provider's answer was larger than we read into memory (`limit_bytes`).

    Never retried: the same request would bring the same body. The cause is a provider (or a
    proxy in front of it) sending far more than any page of the API holds.
    """

    def __init__(self, message: str, info: CallInfo | None = None, *, limit_bytes: int) -> None:
        super().__init__(message, info)
        self.limit_bytes = limit_bytes


__all__ = [
    "CallInfo",
    "Conflict",
    "Forbidden",
    "IdempotencyConflict",
    "InvalidInput",
    "NotFound",
    "ProtocolError",
    "ProviderError",
    "RateLimited",
    "ResponseTooLarge",
    "StaleGuard",
    "Unauthorized",
    "Unavailable",
]
