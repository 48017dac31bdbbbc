"""Shared HTTP machinery for both clients: one pooled httpx.Client, attempts, logging.

Each API (gateway, company) supplies only what differs: its prefix, its auth headers and how to
read its error envelope into `ErrorDetails`. This module is the request loop: timeouts, retries,
streaming each answer in under a size cap, logging, and keeping credentials out of logs,
messages and reprs. What an answer means (its JSON, Retry-After, the typed error for its status)
is `upstream.responses`; the shapes of a call and a reply are `upstream.calls`. Their names are
re-exported here, where the clients have always imported them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

import httpx
import msgspec
import structlog

from foundation import log_item
from upstream.calls import Call, Reply
from upstream.errors import (
    CallInfo,
    ProtocolError,
    ProviderError,
    ResponseTooLarge,
    Unauthorized,
    Unavailable,
)
from upstream.responses import (
    DEFAULT_RETRY_AFTER,
    MAX_RESPONSE_BYTES,
    UNREADABLE,
    EnvelopeReader,
    ErrorDetails,
    decode_json,
    looks_like_idempotency_conflict,
    parse_retry_after,
    read_capped_body,
    status_error,
)
from upstream.retry import Retrier, RetryPolicy, provider_retry_after
from upstream.throttle import Throttle

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_RETRY_AFTER",
    "DEFAULT_TIMEOUT",
    "MAX_RESPONSE_BYTES",
    "Call",
    "EnvelopeReader",
    "ErrorDetails",
    "HttpCore",
    "Reply",
    "credential_problem",
    "join_base",
    "looks_like_idempotency_conflict",
    "parse_retry_after",
    "safe_origin",
]

log = structlog.get_logger(__name__)

#: Per-attempt timeouts: a connect that takes 5 s is a dead host; 15 s covers the slowest page.
DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=5.0, read=15.0, write=15.0, pool=5.0)
#: Pool sized for a worker process's threads sharing one client per API.
DEFAULT_LIMITS: Final = httpx.Limits(
    max_connections=20, max_keepalive_connections=10, keepalive_expiry=30
)


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
    max_response_bytes: int = field(repr=False, default=MAX_RESPONSE_BYTES)
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
                **({"retry_after_s": asked} if (asked := provider_retry_after(error)) else {}),
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
        request = self._client.build_request(
            call.method,
            call.path.lstrip("/"),
            params=dict(call.params) if call.params else None,
            content=content,
            headers=headers,
            timeout=self._timeout(left),
        )
        started = time.perf_counter()
        try:
            # Streamed so a body is read under the size cap, never whole and unbounded.
            response = self._client.send(request, stream=True)
            try:
                body = read_capped_body(response, self.max_response_bytes)
            finally:
                response.close()
        except httpx.HTTPError as exc:
            self._log(call, number, None, started, error=type(exc).__name__)
            raise self._transport_error(call, exc) from None
        status = response.status_code
        self._log(call, number, status, started)
        if body is None:
            raise ResponseTooLarge(
                f"{call.operation}: {self.api} answered {status} with a body over the "
                f"{self.max_response_bytes:,}-byte limit of one answer, so it was not read. "
                "No page of the API should be that large: check the base URL, or ask for a "
                "smaller page.",
                self._info(call, status),
                limit_bytes=self.max_response_bytes,
            )
        data = decode_json(body)
        if 200 <= status < 300:
            if data is UNREADABLE:
                raise ProtocolError(
                    f"{call.operation}: {self.api} answered {status} with a body "
                    "that is not valid JSON. Safe calls are retried; if this persists, report it.",
                    self._info(call, status),
                )
            return Reply(status=status, data=data)
        details = self.read_envelope(data) if data is not UNREADABLE else ErrorDetails()
        raise status_error(
            call,
            status,
            response.headers,
            self._info(call, status, details),
            details,
            api=self.api,
            credential_hint=self.credential_hint,
        )

    def _log(
        self, call: Call, number: int, status: int | None, started: float, error: str | None = None
    ) -> None:
        fields: dict[str, object] = {
            "api": self.api,
            "operation": call.operation,
            "method": call.method,
            "path": self._prefix + call.path,
            "status": status,
            "attempt": number,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
        }
        if error or status is None or status >= 400:
            # A refused or failed request is news; a routine one is a per-item line.
            log.info("upstream.request", **fields, **({"error": error} if error else {}))
        else:
            log_item(log, "upstream.request", **fields)

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
