"""Shared HTTP machinery for both clients: one pooled httpx.Client, attempts, logging, errors.

Each API (gateway, company) supplies only what differs: its prefix, its auth headers and how to
read its error envelope into `ErrorDetails`. Everything else (timeouts, retries, JSON, mapping an
HTTP status to a typed exception with a useful message, keeping credentials out of logs,
messages and reprs) lives here once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import httpx
import msgspec
import structlog

from upstream.errors import (
    CallInfo,
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidInput,
    NotFound,
    ProtocolError,
    ProviderError,
    RateLimited,
    StaleGuard,
    Unauthorized,
    Unavailable,
)
from upstream.retry import Retrier, RetryPolicy
from upstream.throttle import Throttle
from upstream.wire.evidence import Evidence

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=15.0, write=15.0, pool=5.0)
DEFAULT_LIMITS = httpx.Limits(max_connections=20, max_keepalive_connections=10, keepalive_expiry=30)
DEFAULT_RETRY_AFTER = 1.0


@dataclass(frozen=True, slots=True)
class Call:
    """One logical call: what to send and how safe it is to repeat.

    `safe` is True for reads and for writes that carry an Idempotency-Key; only safe calls are
    retried after an answer that may mean the request was processed (5xx, timeout, bad JSON).
    """

    operation: str
    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: Mapping[str, Any] | None = None
    idempotency_key: UUID | None = None
    safe: bool = False
    capability: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful (2xx) answer with its decoded JSON."""

    status: int
    data: object


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    """What an API's error envelope said: the provider's kind, code, words and receipts."""

    kind: str | None = None
    code: str | None = None
    message: str | None = None
    evidence: tuple[Evidence, ...] = ()


EnvelopeReader = Callable[[object], ErrorDetails]


def join_base(root_url: str, prefix: str) -> str:
    """`http://host:8080` + `/v1` -> `http://host:8080/v1`; tolerates a root already ending so."""
    root = root_url.strip().rstrip("/")
    if root.endswith(prefix):
        return root
    return root + prefix


def safe_origin(url: str) -> str:
    """The scheme, host and port of a url, dropping any user:password part for display."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def credential_problem(name: str, value: str) -> str | None:
    """Why a credential cannot be sent as a header value, in words safe to show; None if fine.

    Stray spaces, tabs and newlines (copy-paste from a dashboard) are the common case; they are
    reported without echoing the credential.
    """
    if not value:
        return f"the {name} is empty"
    if value != value.strip():
        return f"the {name} has leading or trailing whitespace (a stray space or newline)"
    if any(not (0x21 <= ord(ch) <= 0x7E) for ch in value):
        return f"the {name} contains spaces, control or non-ASCII characters"
    return None


def parse_retry_after(value: str | None) -> float:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if value is None:
        return DEFAULT_RETRY_AFTER
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return DEFAULT_RETRY_AFTER
    return max(0.0, when.timestamp() - time.time())


_IDEMPOTENCY_WORDS = ("envelope", "existing", "different", "material", "reuse", "change")


def looks_like_idempotency_conflict(call: Call, details: ErrorDetails) -> bool:
    """A 400 on a keyed write whose message is about the idempotent identity, not the input."""
    if call.idempotency_key is None or not details.message:
        return False
    text = details.message.lower()
    return "idempot" in text and any(word in text for word in _IDEMPOTENCY_WORDS)


@dataclass(slots=True)
class HttpCore:
    """One API's pooled client. Holds the credentials; never shows them.

    `secrets` (display name -> value) are checked once for characters that cannot travel in a
    header, and scrubbed from every provider message we put into an exception, in case a
    provider echoes a header back.
    """

    api: str
    base_url: str
    auth_headers: Mapping[str, str] = field(repr=False)
    secrets: Mapping[str, str] = field(repr=False)
    read_envelope: EnvelopeReader = field(repr=False)
    credential_hint: str = field(repr=False, default="")
    transport: httpx.BaseTransport | None = field(repr=False, default=None)
    timeout: httpx.Timeout = field(repr=False, default_factory=lambda: DEFAULT_TIMEOUT)
    limits: httpx.Limits = field(repr=False, default_factory=lambda: DEFAULT_LIMITS)
    policy: RetryPolicy = field(repr=False, default_factory=RetryPolicy)
    clock: Callable[[], float] = field(repr=False, default=time.monotonic)
    sleep: Callable[[float], None] = field(repr=False, default=time.sleep)
    rng: random.Random = field(repr=False, default_factory=random.Random)
    throttle: Throttle | None = field(repr=False, default=None)
    _client: httpx.Client = field(init=False, repr=False)
    _retrier: Retrier = field(init=False, repr=False)
    _problem: str | None = field(init=False, repr=False, default=None)
    _prefix: str = field(init=False, repr=False, default="")

    def __post_init__(self) -> None:
        self._client = httpx.Client(
            base_url=self.base_url,
            transport=self.transport,
            timeout=self.timeout,
            limits=self.limits,
            headers={"Accept": "application/json", "User-Agent": "recon-upstream/0.1"},
            follow_redirects=False,
            trust_env=False,
        )
        self._retrier = Retrier(self.policy, clock=self.clock, sleep=self.sleep, rng=self.rng)
        self._prefix = urlsplit(self.base_url).path.rstrip("/")
        problems = [credential_problem(n, v) for n, v in self.secrets.items()]
        self._problem = next((p for p in problems if p is not None), None)

    def __repr__(self) -> str:
        return f"HttpCore(api={self.api!r}, base_url={safe_origin(self.base_url)!r})"

    def close(self) -> None:
        """Release pooled connections."""
        self._client.close()

    def scrub(self, text: str | None) -> str | None:
        """Remove any credential that a provider echoed into its message."""
        if text is None:
            return None
        for secret in self.secrets.values():
            if secret:
                text = text.replace(secret, "***")
        return text

    def send(self, call: Call) -> Reply:
        """Run one logical call with retries; return the 2xx reply or raise a typed error."""
        if self._problem is not None:
            raise Unauthorized(
                f"{self.api} credentials cannot be sent: {self._problem}. Check the configured "
                f"{self.credential_hint or 'credentials'} for stray spaces or characters.",
                self._info(call),
                local=True,
            )

        def on_retry(number: int, delay: float, error: ProviderError) -> None:
            log.warning(
                "upstream.retry",
                api=self.api,
                operation=call.operation,
                method=call.method,
                path=self._prefix + call.path,
                attempt=number,
                status=error.http_status,
                error=type(error).__name__,
                delay_s=round(delay, 3),
            )

        return self._retrier.run(
            lambda number, left: self._attempt(call, number, left),
            safe=call.safe,
            on_retry=on_retry,
        )

    def _info(
        self, call: Call, status: int | None = None, d: ErrorDetails | None = None
    ) -> CallInfo:
        d = d or ErrorDetails()
        return CallInfo(
            operation=call.operation,
            method=call.method,
            path=self._prefix + call.path,
            http_status=status,
            kind=d.kind,
            code=d.code,
            provider_message=self.scrub(d.message),
            evidence=d.evidence,
        )

    def _timeout(self, left: float) -> httpx.Timeout:
        """Per-attempt timeouts, none longer than what is left of the call's deadline."""

        def cap(value: float | None) -> float:
            return max(0.001, min(value if value is not None else left, left))

        t = self.timeout
        return httpx.Timeout(
            connect=cap(t.connect), read=cap(t.read), write=cap(t.write), pool=cap(t.pool)
        )

    def _attempt(self, call: Call, number: int, left: float) -> Reply:
        """One HTTP exchange, turned into a Reply or a typed error."""
        if self.throttle is not None:
            left -= self.throttle.acquire()
        if left <= 0:
            raise Unavailable(
                f"{call.operation}: the call's deadline of {self.policy.deadline:g}s passed "
                f"before {self.api} answered. Try again later.",
                self._info(call),
            )
        headers = dict(self.auth_headers)
        if call.idempotency_key is not None:
            headers["Idempotency-Key"] = str(call.idempotency_key)
        content = None
        if call.body is not None:
            content = msgspec.json.encode(call.body)
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            response = self._client.request(
                call.method,
                call.path.lstrip("/"),
                params=dict(call.params) if call.params else None,
                content=content,
                headers=headers,
                timeout=self._timeout(left),
            )
        except httpx.HTTPError as exc:
            self._log(call, number, None, started, error=type(exc).__name__)
            raise self._transport_error(call, exc) from None
        self._log(call, number, response.status_code, started)
        data = self._decode(response)
        if 200 <= response.status_code < 300:
            if data is _UNREADABLE:
                raise ProtocolError(
                    f"{call.operation}: {self.api} answered {response.status_code} with a body "
                    "that is not valid JSON. Safe calls are retried; if this persists, report it.",
                    self._info(call, response.status_code),
                )
            return Reply(status=response.status_code, data=data)
        details = self.read_envelope(data) if data is not _UNREADABLE else ErrorDetails()
        raise self._status_error(call, response, details)

    def _decode(self, response: httpx.Response) -> object:
        try:
            return msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            return _UNREADABLE

    def _log(
        self, call: Call, number: int, status: int | None, started: float, error: str | None = None
    ) -> None:
        log.info(
            "upstream.request",
            api=self.api,
            operation=call.operation,
            method=call.method,
            path=self._prefix + call.path,
            status=status,
            attempt=number,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
            **({"error": error} if error else {}),
        )

    def _transport_error(self, call: Call, exc: httpx.HTTPError) -> Unavailable:
        """A failure with no HTTP answer. Only a failed connect proves nothing was sent."""
        never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        if isinstance(exc, httpx.TimeoutException):
            what = "timed out"
        elif never_sent:
            what = "could not be reached"
        else:
            what = "dropped the connection"
        return Unavailable(
            f"{call.operation}: {self.api} at {safe_origin(self.base_url)} {what} "
            f"({type(exc).__name__}). Try again later; check the URL if it persists.",
            self._info(call),
            maybe_processed=not never_sent,
        )

    def _status_error(self, call: Call, response: httpx.Response, d: ErrorDetails) -> ProviderError:
        """Map an HTTP error status to the typed exception, with a message that says what to do."""
        status = response.status_code
        info = self._info(call, status, d)
        said = f": {info.provider_message}" if info.provider_message else ""
        where = f"{call.method} {info.path} answered {status}"
        if status == 401:
            return Unauthorized(
                f"{self.api} did not accept the credentials ({where} Unauthorized). Check the "
                f"{self.credential_hint or 'credentials'} for stray spaces or characters, and "
                "that the credentials belong to this environment.",
                info,
            )
        if status == 403:
            cap = call.capability
            needs = f"the capability {cap}" if cap else "a capability"
            grant = f"Ask the provider to grant {cap} to this key." if cap else ""
            return Forbidden(
                f"The API key lacks {needs} needed for {call.operation} ({where} Forbidden). "
                f"{grant}".rstrip(),
                info,
                capability=cap,
            )
        if status == 400 and looks_like_idempotency_conflict(call, d):
            return IdempotencyConflict(
                f"Idempotency-Key {call.idempotency_key} was already used for {call.operation} "
                "with different request material, so the gateway refused this request (400) and "
                "did nothing. Send the original material under this key, or the new material "
                f"under a new key{said}.",
                info,
            )
        if status in (400, 422):
            return InvalidInput(
                f"{call.operation} was refused as invalid ({where}){said}. Correct the request; "
                "repeating it unchanged will not help.",
                info,
            )
        if status == 404:
            return NotFound(
                f"{call.operation}: no such resource ({where}){said}. Check the reference and "
                "that it belongs to this environment.",
                info,
            )
        if status == 409:
            if "stale" in f"{d.code} {d.kind} {d.message}".lower():
                return StaleGuard(
                    f"{call.operation}: the lifecycle guard is stale ({where}); the endpoint "
                    "changed since it was read. Read it again, decide again and send a new "
                    "command. This is never retried automatically.",
                    info,
                )
            return Conflict(f"{call.operation} conflicts with current state ({where}){said}.", info)
        if status == 429:
            wait = parse_retry_after(response.headers.get("Retry-After"))
            return RateLimited(
                f"{self.api} rate-limited {call.operation} ({where}); retry after {wait:g}s.",
                info,
                retry_after=wait,
            )
        if status >= 500:
            return Unavailable(
                f"{self.api} could not serve {call.operation} ({where}){said}. Try again later.",
                info,
            )
        return ProviderError(f"{call.operation}: unexpected answer ({where}){said}.", info)


class _Unreadable:
    """Marker for a body that is not JSON (kept distinct from a JSON null)."""


_UNREADABLE = _Unreadable()
