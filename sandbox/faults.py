"""Fault injection, per route and per delivered event type, all drawn from one seeded stream.

A fault fires with probability ``rate`` and at most ``count`` times (``None``: unlimited).
Route faults act in an ASGI middleware placed after routing (so they know the route template)
and before authentication; delivery faults are consulted when an event is queued for a webhook.

Retry-After: a ``rate_limit_429`` always carries it (``seconds``, default 1); an ``error_5xx``
that answers 503 carries it only when the variant's ``retry_after_on_503`` says so (again
``seconds``, default 1). Both use the variant's ``retry_after_form``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import threading
from collections.abc import Callable
from typing import Any

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from sandbox.clock import Clock
from sandbox.envelopes import (
    CompanyError,
    GatewayError,
    company_envelope,
    rate_limited,
    retry_after_headers,
    unavailable,
)
from sandbox.variants import PRESETS, ProviderVariant

ROUTE_KINDS = ("error_5xx", "rate_limit_429", "slow", "drop_connection", "malformed_json")
DELIVERY_KINDS = (
    "drop",
    "duplicate",
    "reorder",
    "delay",
    "altered_amount",
    "bad_signature",
    "same_id_other_body",
)
ANY = "*"


@dataclasses.dataclass
class Fault:
    """One armed fault. ``target`` is a route key (``"POST /v1/transfers"``) or an event type."""

    target: str
    kind: str
    rate: float = 1.0
    count: int | None = None
    seconds: float | None = None  # slow, Retry-After (429, 503), delivery delay, reorder hold
    status: int = 503  # error_5xx
    when: str = "after"  # drop_connection: "before" or "after" the request is processed
    fired: int = 0

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class FaultBook:
    def __init__(self, seed: int) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(f"faults:{seed}")
        self.route_faults: list[Fault] = []
        self.delivery_faults: list[Fault] = []

    def reseed(self, seed: int) -> None:
        with self._lock:
            self._rng = random.Random(f"faults:{seed}")

    def add_route(self, fault: Fault) -> None:
        if fault.kind not in ROUTE_KINDS:
            raise ValueError(f"unknown route fault kind {fault.kind!r}; one of {ROUTE_KINDS}")
        with self._lock:
            self.route_faults.append(fault)

    def add_delivery(self, fault: Fault) -> None:
        if fault.kind not in DELIVERY_KINDS:
            raise ValueError(f"unknown delivery fault kind {fault.kind!r}; one of {DELIVERY_KINDS}")
        with self._lock:
            self.delivery_faults.append(fault)

    def clear(self) -> None:
        with self._lock:
            self.route_faults.clear()
            self.delivery_faults.clear()

    def _pick(self, faults: list[Fault], target: str) -> list[Fault]:
        fired: list[Fault] = []
        with self._lock:
            for fault in faults:
                if fault.target not in (target, ANY):
                    continue
                if fault.count is not None and fault.fired >= fault.count:
                    continue
                if fault.rate >= 1.0 or self._rng.random() < fault.rate:
                    fault.fired += 1
                    fired.append(fault)
        return fired

    def pick_route(self, route_key: str) -> list[Fault]:
        return self._pick(self.route_faults, route_key)

    def pick_delivery(self, event_type: str) -> list[Fault]:
        return self._pick(self.delivery_faults, event_type)


class DroppedConnectionError(Exception):
    """Raised mid-response so the server closes the socket with the body unfinished."""


class _QuietDrops(logging.Filter):
    """Keep uvicorn from printing a traceback for every connection we drop on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None:
            if isinstance(exc, DroppedConnectionError):
                return False
            exc = exc.__cause__
        return True


def quiet_dropped_connections() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


def _error_bytes(
    route_key: str, error: GatewayError, now_ms: int
) -> tuple[int, bytes, dict[str, str]]:
    if " /company/" in route_key:
        c = CompanyError(error.status, error.message, error.headers)
        body = company_envelope(False, c.message, None, now_ms)
        return c.status, msgspec.json.encode(body), c.headers or {}
    return error.status, msgspec.json.encode(error.to_wire()), error.headers or {}


async def _send_whole(send: Send, status: int, body: bytes, headers: dict[str, str]) -> None:
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _send_truncated(send: Send, status: int, headers: list[Any], body: bytes) -> None:
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    kept.append((b"content-length", str(len(body) + 64).encode()))
    await send({"type": "http.response.start", "status": status, "headers": kept})
    await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
    raise DroppedConnectionError("sandbox fault: connection dropped")


def fault_middleware(
    book: FaultBook, clock: Clock, variant: ProviderVariant = PRESETS["recon"]
) -> Callable[[ASGIApp], ASGIApp]:
    """Litestar middleware factory applying route faults to handlers that carry a ``route_key``.

    ``variant`` decides the Retry-After of injected 429s and 503s.
    """

    quiet_dropped_connections()

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            handler = scope.get("route_handler")
            route_key = handler.opt.get("route_key") if handler is not None else None
            if scope["type"] != ScopeType.HTTP or not route_key:
                await app(scope, receive, send)
                return
            fired = {f.kind: f for f in book.pick_route(route_key)}
            if (slow := fired.get("slow")) is not None:
                await asyncio.sleep(slow.seconds if slow.seconds is not None else 2.0)
            if (limit := fired.get("rate_limit_429")) is not None:
                retry = round(limit.seconds) if limit.seconds is not None else 1
                problem = rate_limited(retry)
                problem.headers = retry_after_headers(retry, variant)
                await _send_whole(send, *_error_bytes(route_key, problem, clock.now_ms()))
                return
            if (err := fired.get("error_5xx")) is not None:
                problem = unavailable()
                problem.status = err.status
                if err.status == 503 and variant.retry_after_on_503:
                    wait = err.seconds if err.seconds is not None else 1.0
                    problem.headers = retry_after_headers(wait, variant)
                await _send_whole(send, *_error_bytes(route_key, problem, clock.now_ms()))
                return
            drop = fired.get("drop_connection")
            if drop is not None and drop.when == "before":
                await _send_truncated(send, 200, [], b'{"status":200,"body":{}}')
            garble = fired.get("malformed_json")
            if drop is None and garble is None:
                await app(scope, receive, send)
                return
            captured: list[Message] = []

            async def capture(message: Message) -> None:
                captured.append(message)

            await app(scope, receive, capture)
            start = next(m for m in captured if m["type"] == "http.response.start")
            body = b"".join(
                m.get("body", b"") for m in captured if m["type"] == "http.response.body"
            )
            if drop is not None:
                await _send_truncated(send, start["status"], list(start["headers"]), body)
            cut = body[: max(1, len(body) // 2)] + b"\x00}"
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(cut)).encode()))
            await send(
                {"type": "http.response.start", "status": start["status"], "headers": headers}
            )
            await send({"type": "http.response.body", "body": cut, "more_body": False})

        return middleware

    return factory
