"""The webhook receiver: a raw ASGI route of the Litestar app, dispatched ahead of its router.

Litestar's request path (parsing, DI, response objects) would spend much of the receiver's
budget before any storage happens (docs/decisions.md, "Figures behind the code's choices");
this route reads the ASGI messages itself. Order of work, each step refusing with its own
status and counted in metrics:

1. no `webhook-*` or signature header sent twice with different values (400); POST only (405);
   content type application/json (415); declared size within the limit (413); the body read
   without buffering more than the limit (413) and within the body deadline (408);
2. signature over the exact raw bytes, every accepted key, timestamp tolerance both ways (401);
3. only then the body is parsed, to file the delivery (id, event type, or quarantine);
4. the group commit; the answer is 2xx only once the delivery's batch committed, 503 if it
   could not be (the provider retries; nothing is acknowledged without a commit).

Enqueueing for processing happens after the commit, in the writer's relay, never here.

Refusals are logged, but nobody authenticated their sender: every value a request chose is cut
to a bounded length and printed safely (foundation.untrusted_text), and at most one line per
refusal reason per second is written, carrying how many were left out (foundation.quiet_logs).
One client sending 100 KB headers as fast as it can makes a few lines a second, not 25 MB.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Final, cast

import anyio.to_thread
import structlog
from litestar.types import Receive, Scope, Send

from app import metrics
from app.correlation import REQUEST_ID_HEADER, request_id
from app.receiver.deadlines import TaskDeadlines
from app.receiver.group_commit import GroupCommitWriter, InboxUnavailableError
from app.receiver.intake import KEPT_HEADERS, build_delivery
from app.receiver.responses import acknowledge, refusal_body, send_json
from app.signing_keys import SigningKeys
from foundation import PerReasonLimit, bind_correlation_id, bounded
from reconciliation.notifications import BODY_CONFLICT_REASON, Outcome
from reconciliation.store import utcnow
from upstream import BAD_SIGNATURE, SignatureError, VerifiedSignature

#: Seconds a provider is asked to wait before retrying after a 503.
RETRY_AFTER_SECONDS: Final = 5
#: The only media type accepted.
JSON_MEDIA_TYPE: Final = "application/json"
#: Seconds a sender has to deliver the whole body, unless told otherwise.
BODY_TIMEOUT_SECONDS: Final = 10.0
#: One refusal line per reason per this many seconds; the rest are counted into the next line.
REFUSAL_LOG_INTERVAL_SECONDS: Final = 1.0

#: The outcome counters, looked up by outcome rather than by its label on every delivery.
_OUTCOME_COUNTERS: Final = {o: metrics.DELIVERY_OUTCOMES[o.value] for o in Outcome}
#: Outcomes set aside for a person to look at: each one is logged.
_SET_ASIDE: Final = frozenset({Outcome.QUARANTINED, Outcome.CONFLICT})

log = structlog.get_logger(__name__)


class _ClientGoneError(Exception):
    """The sender hung up before the body was complete: there is nobody to answer."""


class WebhookReceiver:
    """Verifies, files and acknowledges webhook deliveries; `serve` is the ASGI callable."""

    def __init__(
        self,
        *,
        keys: SigningKeys,
        writer: GroupCommitWriter,
        scheme: str,
        signature_header: str,
        body_limit_bytes: int,
        body_timeout_seconds: float = BODY_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._keys = keys
        self._writer = writer
        self._scheme = scheme
        self._signature_header = signature_header.lower()
        self._limit = body_limit_bytes
        self._body_deadlines = TaskDeadlines(body_timeout_seconds)
        self._clock = clock
        self._refusal_lines = PerReasonLimit(REFUSAL_LOG_INTERVAL_SECONDS)
        self._too_large = (
            f"body exceeds the limit of {body_limit_bytes} bytes (RECON_WEBHOOK_BODY_LIMIT_BYTES)"
        )
        # Only these are decoded: the rest of a request's headers are never looked at.
        self._wanted_headers = {
            name.encode(): name
            for name in (*KEPT_HEADERS, "content-length", self._signature_header)
        }

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point of `<RECON_WEBHOOK_PATH>`: `handle`, and a 500 if it breaks.

        The receiver is dispatched ahead of the framework (app.receiver_first), so nothing
        else would catch an unexpected error; never a 2xx either way.
        """
        try:
            await self.handle(scope, receive, send)
        except Exception as exc:
            log.error("webhook.unhandled_error", error=type(exc).__name__, exc_info=exc)
            with contextlib.suppress(Exception):  # the response may have started already
                await send_json(send, 500, refusal_body("internal_error", "see the server log"))

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Verify, file and acknowledge one delivery (or refuse it)."""
        headers, repeated = _read_headers(scope["headers"], self._wanted_headers)
        if repeated is not None:
            # Which copy would the signature cover? Taking either one silently lets a proxy
            # or an attacker choose what is verified; the sender must send one.
            await self._refuse(
                scope,
                send,
                headers,
                400,
                "duplicate_header",
                f"the {repeated} header was sent more than once with different values: "
                "send it once",
            )
            return
        if scope.get("method") != "POST":
            await self._refuse(
                scope,
                send,
                headers,
                405,
                "bad_method",
                "only POST is accepted here",
                ((b"allow", b"POST"),),
            )
            return
        content_type = headers.get("content-type", "")
        if content_type != JSON_MEDIA_TYPE:  # the usual case, without parsing it
            media_type = content_type.partition(";")[0].strip().lower()
            if media_type != JSON_MEDIA_TYPE:
                shown = media_type or "none"
                await self._refuse(
                    scope,
                    send,
                    headers,
                    415,
                    "bad_content_type",
                    f"content type {shown!r} is not accepted: send {JSON_MEDIA_TYPE}",
                )
                return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:
            await self._refuse(scope, send, headers, 413, "too_large", self._too_large)
            return
        deadline = self._body_deadlines.arm()
        try:
            body = await self._read_body(receive)
        except _ClientGoneError:
            return
        except asyncio.CancelledError:
            if not self._body_deadlines.expired(deadline):
                raise
            await self._refuse(
                scope,
                send,
                headers,
                408,
                "body_timeout",
                f"the body did not arrive within {self._body_deadlines.seconds:g} s "
                "(RECON_WEBHOOK_BODY_TIMEOUT_SECONDS)",
                ((b"connection", b"close"),),
            )
            return
        finally:
            self._body_deadlines.disarm(deadline)
        if body is None:
            await self._refuse(scope, send, headers, 413, "too_large", self._too_large)
            return

        try:
            try:
                verified = self._timed_verify(headers, body)
            except SignatureError as refusal:
                verified = await self._verify_with_fresh_keys(refusal, headers, body)
        except SignatureError as refusal:
            await self._refuse(
                scope, send, headers, 401, refusal.outcome, refusal.reason, logged=refusal.logged
            )
            return

        delivery = build_delivery(
            verified=verified,
            body=body,
            headers=headers,
            scheme=self._scheme,
            signature_header=self._signature_header,
            received_at=utcnow(),
        )
        try:
            recorded = await self._writer.write(delivery)
        except InboxUnavailableError as exc:
            await self._refuse(
                scope,
                send,
                headers,
                503,
                "db_unavailable",
                f"{exc}: nothing was stored, retry later",
                ((b"retry-after", str(RETRY_AFTER_SECONDS).encode()),),
            )
            return
        outcome = recorded.outcome
        _OUTCOME_COUNTERS[outcome].inc()
        correlation = _request_id(headers)
        if outcome in _SET_ASIDE:
            bind_correlation_id(correlation.decode("ascii"))
            log.warning(
                "webhook.quarantined",
                outcome=outcome.value,
                delivery_id=bounded(delivery.delivery_id),
                row_id=recorded.row_id,
                reason=delivery.quarantine_reason or BODY_CONFLICT_REASON,
            )
        await acknowledge(send, outcome, correlation)

    async def _refuse(
        self,
        scope: Scope,
        send: Send,
        headers: dict[str, str],
        status: int,
        outcome: str,
        reason: str,
        extra: tuple[tuple[bytes, bytes], ...] = (),
        *,
        logged: str | None = None,
    ) -> None:
        """Count, log (reason, claimed id, remote address; never body or secret) and answer;
        `logged`, when given, is the reason as the log keeps it (with what the sender is not
        told, such as how many keys were tried).

        The log line is rate-limited per outcome and every value in it is bounded: the sender
        is not authenticated, so it must not decide how much we write.
        """
        metrics.DELIVERY_OUTCOMES[outcome].inc()
        correlation = _request_id(headers)
        suppressed = self._refusal_lines.admit(outcome)
        if suppressed is not None:
            client = scope.get("client")
            bind_correlation_id(correlation.decode("ascii"))
            log.warning(
                "webhook.refused",
                status=status,
                outcome=outcome,
                reason=bounded(logged or reason, REASON_LOG_LIMIT),
                claimed_delivery_id=bounded(headers.get("webhook-id")),
                remote=f"{client[0]}:{client[1]}" if client else None,
                suppressed_since_last=suppressed,
            )
        await send_json(
            send,
            status,
            refusal_body(outcome, reason),
            ((REQUEST_ID_HEADER, correlation), *extra),
        )

    async def _verify_with_fresh_keys(
        self, refusal: SignatureError, headers: dict[str, str], body: bytes
    ) -> VerifiedSignature:
        """Verify again after reloading the keys, or let the first refusal stand.

        A secret registered moments ago by another process may not be loaded yet; the reload
        runs at most once a second (SigningKeys.refresh_allowed), so a flood of bad signatures
        cannot turn into a flood of database reads.
        """
        if refusal.outcome != BAD_SIGNATURE or not self._keys.refresh_allowed():
            raise refusal
        if not await anyio.to_thread.run_sync(self._keys.refresh):
            raise refusal
        return self._timed_verify(headers, body)

    def _timed_verify(self, headers: dict[str, str], body: bytes) -> VerifiedSignature:
        started = time.perf_counter()
        try:
            return self._keys.current().verify(headers, body, self._clock())
        finally:
            metrics.VERIFICATION_SECONDS.observe(time.perf_counter() - started)

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it exceeds the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGoneError
            chunk = cast(bytes, message.get("body", b""))
            size += len(chunk)
            if size > self._limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)


#: Longest refusal reason logged: ours are one sentence, but some quote what the sender sent.
REASON_LOG_LIMIT: Final = 300


def _read_headers(
    raw: Iterable[tuple[bytes, bytes]], wanted: dict[bytes, str]
) -> tuple[dict[str, str], str | None]:
    """The wanted headers as text, and the name of one sent twice with different values.

    `wanted` maps each raw name to its text, so only values are decoded. The same value twice
    (a proxy that repeats a header) is harmless and accepted.
    """
    headers: dict[str, str] = {}
    repeated: str | None = None
    for key, value in raw:
        name = wanted.get(key)
        if name is None:
            continue
        text = value.decode("latin-1")
        if headers.setdefault(name, text) != text and repeated is None:
            repeated = name
    return headers, repeated


def _request_id(headers: dict[str, str]) -> bytes:
    """The correlation id echoed to the sender: its own X-Request-Id if plain, else a new one.

    Bound into the log context only when the request logs something: binding on every
    request would cost more than the logging it serves.
    """
    supplied = headers.get("x-request-id")
    return request_id(supplied.encode("latin-1") if supplied else None)
