"""Webhook registry and delivery: signing, retries with backoff, counters, suspension, faults.

Each event becomes one message per subscribed ACTIVE webhook. A message is attempted over real
HTTP (httpx) until a 2xx or until its retry schedule runs out; every attempt counts in the
webhook's counters, and a run of ``suspend_after_failures`` failed attempts suspends it.
Delivery faults are drawn once per message, when it is queued.

What goes on the wire follows the provider variant (sandbox/variants.py): the body's shape
(`payload_shape`, written by sandbox.events.shape_payload from the canonical event that faults
and the event log use) and what the `webhook-id` header carries (`delivery_id`): the body's own
id, or a message id of its own, ``msg_<hex>``, fresh for each event, the same on every webhook,
retry and re-send of it, and never equal to a body id. Whether a money event's body says its
outcome in a `status` member or leaves it to the event type is `body_outcome`. Schemes that sign only the body send
no `webhook-id` at all; the body id is then the delivery's only identity, and the log says so.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections import deque
from typing import Any

import httpx

from sandbox.clock import Clock
from sandbox.config import SandboxConfig, format_timestamp
from sandbox.events import (
    MESSAGE_PREFIX,
    bump_amount,
    encode_payload,
    event_id_for,
    payload,
    shape_payload,
)
from sandbox.faults import Fault, FaultBook
from sandbox.ids import IdSource
from sandbox.scheduler import Scheduler
from sandbox.signing import sign

ACTIVE = "ACTIVE"
INACTIVE = "INACTIVE"
SUSPENDED = "SUSPENDED"
WEBHOOK_STATUSES = (ACTIVE, INACTIVE, SUSPENDED)
DEFAULT_REORDER_HOLD = 1.0

_log = logging.getLogger("sandbox.webhooks")


@dataclasses.dataclass
class Webhook:
    webhook_id: str
    url: str
    event_types: list[str]
    secret: str
    description: str | None
    status: str
    created_ms: int
    retry_policy: dict[str, Any] | None
    last_triggered_ms: int | None = None
    total: int = 0
    successful: int = 0
    failed: int = 0
    consecutive_failures: int = 0
    held: list[Message] = dataclasses.field(default_factory=list)

    def render(self) -> dict[str, Any]:
        last = self.last_triggered_ms
        return {
            "webhookId": self.webhook_id,
            "url": self.url,
            "eventTypes": list(self.event_types),
            "status": self.status,
            "createdAt": format_timestamp(self.created_ms),
            "lastTriggered": format_timestamp(last) if last is not None else None,
            "totalDeliveries": self.total,
            "successfulDeliveries": self.successful,
            "failedDeliveries": self.failed,
        }


@dataclasses.dataclass
class Message:
    """One event on its way to one webhook (a duplicate is a second Message with the same id)."""

    event_id: str
    event_type: str
    webhook: Webhook
    body: bytes
    bad_signature: bool = False
    attempts: int = 0
    state: str = "pending"  # pending, held, delivered, failed, dropped, abandoned
    label: str = "original"
    #: What the `webhook-id` header carries: the body's id, or a message id of its own.
    delivery_id: str = ""
    #: Messages sent only once this one is settled (acknowledged, or its retries spent).
    followers: list[Message] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Attempt:
    """One line of the delivery log: what was sent, where, and what came back."""

    event_id: str
    event_type: str
    webhook_id: str
    url: str
    attempt: int
    at_ms: int
    label: str
    outcome: str  # delivered, failed, dropped
    status_code: int | None
    error: str | None
    headers: dict[str, str]
    body: bytes
    delivery_id: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "eventId": self.event_id,
            "deliveryId": self.delivery_id or self.event_id,
            "eventType": self.event_type,
            "webhookId": self.webhook_id,
            "url": self.url,
            "attempt": self.attempt,
            "at": format_timestamp(self.at_ms),
            "label": self.label,
            "outcome": self.outcome,
            "statusCode": self.status_code,
            "error": self.error,
            "headers": self.headers,
            "body": self.body.decode(),
        }


class WebhookHub:
    def __init__(
        self,
        config: SandboxConfig,
        clock: Clock,
        ids: IdSource,
        scheduler: Scheduler,
        faults: FaultBook,
        lock: threading.RLock,
    ) -> None:
        self.config = config
        self._clock = clock
        self._ids = ids
        self._scheduler = scheduler
        self._faults = faults
        self._lock = lock
        self.webhooks: dict[str, Webhook] = {}
        self.events: deque[dict[str, Any]] = deque(maxlen=config.delivery_log_limit)
        self.log: deque[Attempt] = deque(maxlen=config.delivery_log_limit)
        self._http: httpx.Client | None = None

    @property
    def http(self) -> httpx.Client:
        """Made on first delivery (building an SSL context is slow); replaceable by tests."""
        with self._lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self.config.delivery_timeout_seconds)
            return self._http

    @http.setter
    def http(self, client: httpx.Client) -> None:
        with self._lock:
            self._http = client

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def clear(self) -> None:
        self.webhooks.clear()
        self.events.clear()
        self.log.clear()

    # --- registry ---------------------------------------------------------------------

    def register(
        self,
        url: str,
        event_types: list[str],
        secret: str,
        description: str | None,
        is_active: bool,
        retry_policy: dict[str, Any] | None,
    ) -> Webhook:
        hook = Webhook(
            webhook_id="wh_" + self._ids.new().replace("-", ""),
            url=url,
            event_types=list(dict.fromkeys(event_types)),
            secret=secret,
            description=description,
            status=ACTIVE if is_active else INACTIVE,
            created_ms=self._clock.now_ms(),
            retry_policy=retry_policy,
        )
        self.webhooks[hook.webhook_id] = hook
        return hook

    def retry_delays(self, hook: Webhook) -> list[float]:
        """Seconds before each retry: the webhook's own policy if it gave one, else the config's."""
        policy = hook.retry_policy
        if policy is None:
            return list(self.config.delivery_retry_schedule)
        scale = self.config.retry_policy_time_scale
        first, factor = float(policy["initialDelaySeconds"]), float(policy["backoffMultiplier"])
        return [first * factor**i * scale for i in range(int(policy["maxAttempts"]) - 1)]

    # --- emitting ---------------------------------------------------------------------

    def emit(self, event_type: str, data: dict[str, Any]) -> str:
        """Record an event and queue it for every ACTIVE webhook subscribed; caller holds the lock."""
        variant = self.config.variant
        event_id = event_id_for(variant.payload_shape, self._ids.new())
        body_obj = payload(event_id, event_type, self._clock.now_ms(), data)
        self.events.append(body_obj)
        delivery_id = event_id
        if variant.delivery_id == "message-id":
            delivery_id = MESSAGE_PREFIX + self._ids.new().replace("-", "")
        for hook in self.webhooks.values():
            if hook.status == ACTIVE and event_type in hook.event_types:
                self._queue(hook, body_obj, delivery_id)
        return event_id

    def _encode(self, event: dict[str, Any]) -> bytes:
        """The wire body of a canonical event, in the shape this provider sends."""
        variant = self.config.variant
        return encode_payload(shape_payload(variant.payload_shape, event, variant.body_outcome))

    def _queue(self, hook: Webhook, body_obj: dict[str, Any], delivery_id: str) -> None:
        event_id, event_type = body_obj["id"], body_obj["event"]
        fired = {f.kind: f for f in self._faults.pick_delivery(event_type)}
        data = body_obj["data"]
        if "altered_amount" in fired:
            body_obj = {**body_obj, "data": bump_amount(data)}
        msg = Message(event_id, event_type, hook, self._encode(body_obj), "bad_signature" in fired)
        msg.delivery_id = delivery_id
        if "drop" in fired:
            self._drop(msg)
            return
        first_delay = _seconds(fired.get("delay"), 0.0)
        if "reorder" in fired:
            msg.state = "held"
            hook.held.append(msg)
            hold = _seconds(fired["reorder"], DEFAULT_REORDER_HOLD)
            self._scheduler.after(first_delay + hold, lambda: self._release(hook, msg), "io")
        else:
            self._scheduler.after(first_delay, lambda: self._attempt(msg), "io")
        if "duplicate" in fired:
            twin = dataclasses.replace(msg, attempts=0, state="pending", label="duplicate")
            self._scheduler.after(first_delay, lambda: self._attempt(twin), "io")
        if "same_id_other_body" in fired:
            other = {**body_obj, "data": _other_body(body_obj["data"])}
            if other["data"] == body_obj["data"]:
                other["createdAt"] = format_timestamp(self._clock.now_ms() + 1000)
            twin = Message(event_id, event_type, hook, self._encode(other), label="other_body")
            twin.delivery_id = delivery_id
            # A re-send: it leaves only once the original is settled, so the receiver always
            # meets the original body first (two bodies in flight together would race).
            msg.followers.append(twin)

    def _drop(self, msg: Message) -> None:
        """The provider believes it delivered; nothing reaches the receiver."""
        hook = msg.webhook
        msg.state = "dropped"
        now = self._clock.now_ms()
        hook.total += 1
        hook.successful += 1
        hook.consecutive_failures = 0
        hook.last_triggered_ms = now
        self.log.append(
            Attempt(
                msg.event_id,
                msg.event_type,
                hook.webhook_id,
                hook.url,
                1,
                now,
                msg.label,
                "dropped",
                None,
                None,
                {},
                msg.body,
                msg.delivery_id,
            )
        )

    def _release(self, hook: Webhook, msg: Message) -> None:
        """Send a message held back by ``reorder`` (once: whichever comes first)."""
        with self._lock:
            if msg.state != "held":
                return
            msg.state = "pending"
            if msg in hook.held:
                hook.held.remove(msg)
        self._attempt(msg)

    # --- attempting -------------------------------------------------------------------

    def _attempt(self, msg: Message) -> None:
        hook = msg.webhook
        with self._lock:
            if hook.status != ACTIVE or msg.state not in ("pending",):
                if msg.state == "pending":
                    msg.state = "abandoned"
                return
            msg.attempts += 1
            now = self._clock.now_ms()
            scheme = self.config.signature_scheme
            secret = hook.secret if not msg.bad_signature else _wrong_secret(scheme, hook.secret)
            headers = {"Content-Type": "application/json"}
            headers.update(
                sign(
                    scheme,
                    secret,
                    msg.delivery_id or msg.event_id,
                    now // 1000,
                    msg.body,
                    self.config.signature_header,
                )
            )
        status_code: int | None = None
        error: str | None = None
        try:
            response = self.http.post(hook.url, content=msg.body, headers=headers)
            status_code = response.status_code
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            error = f"{type(exc).__name__}: {exc}"
        ok = status_code is not None and 200 <= status_code < 300
        with self._lock:
            at = self._clock.now_ms()
            hook.total += 1
            hook.last_triggered_ms = at
            if ok:
                hook.successful += 1
                hook.consecutive_failures = 0
                msg.state = "delivered"
            else:
                hook.failed += 1
                hook.consecutive_failures += 1
                if hook.consecutive_failures >= self.config.suspend_after_failures:
                    hook.status = SUSPENDED
            self.log.append(
                Attempt(
                    msg.event_id,
                    msg.event_type,
                    hook.webhook_id,
                    hook.url,
                    msg.attempts,
                    at,
                    msg.label,
                    "delivered" if ok else "failed",
                    status_code,
                    error,
                    headers,
                    msg.body,
                    headers.get("webhook-id", msg.event_id),
                )
            )
            released = list(hook.held) if msg.label == "original" else []
            if not ok:
                delays = self.retry_delays(hook)
                if msg.attempts <= len(delays) and hook.status == ACTIVE:
                    self._scheduler.after(
                        delays[msg.attempts - 1], lambda: self._attempt(msg), "io"
                    )
                else:
                    msg.state = "failed"
            followers: list[Message] = []
            if msg.state in ("delivered", "failed"):
                followers, msg.followers = msg.followers, []
        for held in released:  # reorder: the held message goes out after this one
            self._release(hook, held)
        for follower in followers:
            self._scheduler.after(0.0, functools.partial(self._attempt, follower), "io")


def _seconds(fault: Fault | None, default: float) -> float:
    if fault is None or fault.seconds is None:
        return default
    return fault.seconds


def _other_body(data: dict[str, Any]) -> dict[str, Any]:
    changed = bump_amount(data)
    if changed.get("narration") is not None:
        changed = {**changed, "narration": f"{changed['narration']} (amended)"}
    return changed


def _wrong_secret(scheme: str, secret: str) -> str:
    """A usable secret of the scheme's form that is not the registered one (``bad_signature``)."""
    if scheme == "standard":
        wrong = "whsec_d3Jvbmctc2VjcmV0LWZvci1zYW5kYm94LWZhdWx0cw=="
        return wrong if wrong != secret else "whsec_YW5vdGhlci13cm9uZy1zZWNyZXQ="
    if scheme == "ed25519":
        return "sandbox-wrong-" + secret  # never ``whsk_``-prefixed, so hashed into a seed
    return secret + "-wrong"
