"""The optional outbound sink: every alert change POSTed to RECON_ALERT_WEBHOOK_URL.

Signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`, `webhook-signature` = `v1,`
+ base64 HMAC-SHA256 of `id.timestamp.body` keyed by the decoded `whsec_` secret), so any
receiver with a Standard Webhooks library can verify it.

The store is the outbox: `alerts.published_state` is the state last delivered. After each pass
every alert whose state differs is sent, oldest first, and marked only when the receiver
answered 2xx; a receiver that is down gets the same messages (same `webhook-id`) next pass, so
nothing is lost and a receiver can deduplicate. This is the one HTTP client inside
`reconciliation/`, kept at the edge: matching and drift rules never wait on it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import httpx
import structlog
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from foundation import Secret, words
from reconciliation.alerts.lifecycle import ACKNOWLEDGED, OPEN, RESOLVED, alert_as_dict
from reconciliation.store.models import Alert
from reconciliation.store.types import utcnow

#: The message type sent for each alert state.
EVENT_TYPES: Final = {
    OPEN: "alert.opened",
    ACKNOWLEDGED: "alert.acknowledged",
    RESOLVED: "alert.resolved",
}

#: Seconds one POST may take; a slow receiver must not hold up the next pass for long.
SEND_TIMEOUT_SECONDS: Final = 5.0

#: Messages sent per pass at most; the rest wait for the next pass, in order.
SEND_LIMIT_PER_PASS: Final = 200

#: Prefix of a Standard Webhooks secret.
SECRET_PREFIX: Final = "whsec_"

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class PublishResult:
    sent: int = 0
    failed: int = 0
    pending: int = 0


def sign(secret: Secret, message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header value for one message."""
    raw = secret.reveal()
    if not raw.startswith(SECRET_PREFIX):
        raise ValueError("an alert webhook secret must start with whsec_")
    encoded = raw[len(SECRET_PREFIX) :]
    # Strict: a lenient decoder drops what is not base64 and could sign with an empty key.
    # Unpadded secrets are common, so the padding is restored first.
    key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    if not key:
        raise ValueError("the alert webhook secret decodes to an empty key")
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def message_id(alert: Alert) -> str:
    """Stable per alert, state and occurrence: a retried send carries the same id."""
    return f"msg_alert_{alert.id}_{alert.state}_{alert.occurrences}"


def alert_text(alert: Alert) -> str:
    """One line a person reads in a chat channel or a pager: what happened, how bad, to what.

    The subject was written with `foundation.money.format_money` and `foundation.readable`, so
    amounts and times read here exactly as in the report and the CLI.
    """
    event = EVENT_TYPES.get(alert.state, f"alert.{alert.state}").removeprefix("alert.")
    return f"[{alert.severity}] alert {alert.id} {event} ({words(alert.kind)}): {alert.subject}"


def message_body(alert: Alert, now: datetime) -> bytes:
    """The signed body: `text` for people, `data` (exact, machine-readable) for programs."""
    payload: dict[str, Any] = {
        "type": EVENT_TYPES.get(alert.state, f"alert.{alert.state}"),
        "timestamp": now.isoformat(),
        "text": alert_text(alert),
        "data": alert_as_dict(alert),
    }
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def publish_alert_changes(
    factory: sessionmaker[Session],
    url: str | None,
    secret: Secret | None,
    *,
    client: httpx.Client | None = None,
) -> PublishResult:
    """Send every alert change not yet delivered; mark what the receiver accepted.

    Without a URL there is nowhere to publish: changes are marked so that configuring a URL
    later sends what happens from then on, not the whole history.
    """
    unpublished = or_(Alert.published_state.is_(None), Alert.published_state != Alert.state)
    if not url:
        with factory.begin() as session:
            session.execute(update(Alert).where(unpublished).values(published_state=Alert.state))
        return PublishResult()
    if secret is None:
        raise ValueError("RECON_ALERT_WEBHOOK_URL is set but RECON_ALERT_WEBHOOK_SECRET is not")
    with factory() as session:
        alerts = list(
            session.scalars(
                select(Alert).where(unpublished).order_by(Alert.id).limit(SEND_LIMIT_PER_PASS)
            )
        )
    own_client = client is None
    http = client or httpx.Client(timeout=SEND_TIMEOUT_SECONDS)
    sent, failed = 0, 0
    try:
        for alert in alerts:
            if _send(http, url, secret, alert):
                with factory.begin() as session:
                    session.execute(
                        update(Alert)
                        .where(Alert.id == alert.id, Alert.state == alert.state)
                        .values(published_state=alert.state)
                    )
                sent += 1
            else:
                failed += 1
                break  # keep the order: the rest wait behind this one
    finally:
        if own_client:
            http.close()
    return PublishResult(sent=sent, failed=failed, pending=len(alerts) - sent)


def _send(http: httpx.Client, url: str, secret: Secret, alert: Alert) -> bool:
    now = utcnow()
    msg_id = message_id(alert)
    body = message_body(alert, now)
    timestamp = int(now.timestamp())
    headers = {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, msg_id, timestamp, body),
    }
    try:
        response = http.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        log.warning("alert.webhook_failed", alert_id=alert.id, error=type(exc).__name__)
        return False
    if 200 <= response.status_code < 300:
        log.info("alert.webhook_sent", alert_id=alert.id, webhook_id=msg_id)
        return True
    log.warning("alert.webhook_refused", alert_id=alert.id, status=response.status_code)
    return False
