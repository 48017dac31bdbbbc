"""Store side of our webhook registration at the company API, and the secrets it signs with.

Secrets are sealed with `SecretBox` before they touch a column (invariant 8, docs/architecture.md) and come back
wrapped in `Secret`. A secret is stored *before* the registration request that carries it goes
out: if recon dies between the two, the provider may sign with it, so we must still accept it.
Such a secret has no subscription yet and is accepted all the same.

A named lease (the `leases` table, on both databases) keeps several web processes starting at
once from registering the same URL twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final, Protocol

import structlog
from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from foundation import Secret, SecretBox
from reconciliation.store.models import Lease, Subscription, WebhookSecret
from reconciliation.store.types import utcnow
from reconciliation.store.write_statements import insert_ignoring_conflicts

#: Key of the list inside `Subscription.event_types` (a JSON object column).
EVENT_TYPES_KEY: Final = "eventTypes"
#: Name of the lease held around "list webhooks, register if missing".
REGISTRATION_LEASE: Final = "webhook-registration"

log = structlog.get_logger(__name__)


class RemoteWebhook(Protocol):
    """A webhook as the company API lists it (upstream's `Webhook` has this shape)."""

    @property
    def webhook_id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def event_types(self) -> Sequence[str]: ...
    @property
    def status(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def last_triggered(self) -> datetime | None: ...
    @property
    def total_deliveries(self) -> int | None: ...
    @property
    def successful_deliveries(self) -> int | None: ...
    @property
    def failed_deliveries(self) -> int | None: ...


def store_secret(
    session: Session, box: SecretBox, secret: Secret, *, subscription_id: int | None = None
) -> WebhookSecret:
    """Seal and keep a signing secret; accepted from now on, until given a `valid_until`."""
    row = WebhookSecret(
        subscription_id=subscription_id,
        secret_encrypted=box.seal(secret.reveal()),
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row


def link_secret(session: Session, secret_id: int, subscription_id: int) -> None:
    """Attach a secret stored before registration to the webhook that now carries it."""
    session.execute(
        update(WebhookSecret)
        .where(WebhookSecret.id == secret_id)
        .values(subscription_id=subscription_id)
    )


def record_webhook(
    session: Session, webhook: RemoteWebhook, *, registered_by_recon: bool
) -> Subscription:
    """Insert or refresh our row for a webhook: status and delivery counters as last read."""
    row = session.scalars(
        select(Subscription).where(Subscription.webhook_id == webhook.webhook_id)
    ).one_or_none()
    now = utcnow()
    if row is None:
        row = Subscription(
            webhook_id=webhook.webhook_id,
            registered_by_recon=registered_by_recon,
            created_at=now,
        )
        session.add(row)
    row.url = webhook.url
    row.event_types = {EVENT_TYPES_KEY: list(webhook.event_types)}
    row.status = webhook.status
    row.description = webhook.description
    row.total_deliveries = webhook.total_deliveries or 0
    row.successful_deliveries = webhook.successful_deliveries or 0
    row.failed_deliveries = webhook.failed_deliveries or 0
    row.last_triggered = webhook.last_triggered
    row.checked_at = now
    session.flush()
    return row


def list_subscriptions(session: Session) -> list[Subscription]:
    """Every webhook we know of, oldest first."""
    return list(session.scalars(select(Subscription).order_by(Subscription.id)))


def accepted_secrets(session: Session, box: SecretBox, now: datetime | None = None) -> list[Secret]:
    """Every stored secret still accepted at `now`, newest first.

    A secret that no configured key can decrypt is skipped and logged (without its value):
    refusing every delivery because one old row is unreadable would be worse.
    """
    moment = now or utcnow()
    rows = session.scalars(
        select(WebhookSecret)
        .where(or_(WebhookSecret.valid_until.is_(None), WebhookSecret.valid_until > moment))
        .order_by(WebhookSecret.id.desc())
    )
    secrets: list[Secret] = []
    for row in rows:
        try:
            secrets.append(box.open(row.secret_encrypted))
        except ValueError as exc:
            log.error("webhook_secret.undecryptable", secret_id=row.id, reason=str(exc))
    return secrets


def secret_counts(session: Session, now: datetime | None = None) -> dict[int | None, int]:
    """Accepted secrets per subscription id (None: stored before a registration completed)."""
    moment = now or utcnow()
    rows = session.execute(
        select(WebhookSecret.subscription_id, func.count())
        .where(or_(WebhookSecret.valid_until.is_(None), WebhookSecret.valid_until > moment))
        .group_by(WebhookSecret.subscription_id)
    )
    return {subscription_id: int(count) for subscription_id, count in rows}


def retire_all_but(
    session: Session, *, keep_secret_id: int, keep_subscription_id: int, overlap: timedelta
) -> int:
    """After a rotation: every other secret expires after `overlap`, older webhooks are retired.

    A secret that already expires sooner keeps its earlier end. Returns how many secrets were
    given an end.
    """
    now = utcnow()
    until = now + overlap
    result = session.execute(
        update(WebhookSecret)
        .where(
            WebhookSecret.id != keep_secret_id,
            or_(WebhookSecret.valid_until.is_(None), WebhookSecret.valid_until > until),
        )
        .values(valid_until=until)
        .returning(WebhookSecret.id)
    ).all()
    session.execute(
        update(Subscription)
        .where(
            Subscription.id != keep_subscription_id,
            Subscription.registered_by_recon.is_(True),
            Subscription.retired_at.is_(None),
        )
        .values(retired_at=now)
    )
    return len(result)


def take_lease(session: Session, name: str, owner: str, ttl: timedelta) -> bool:
    """Hold the named lease for `ttl` if it is free, expired or already ours; commit to publish.

    An UPDATE that only matches a free row, else an INSERT that does nothing on conflict: on
    both databases exactly one of several racing callers sees a row change.
    """
    now = utcnow()
    # RETURNING rather than a row count: drivers do not all report one for ON CONFLICT.
    taken = session.execute(
        update(Lease)
        .where(Lease.name == name, or_(Lease.expires_at < now, Lease.owner == owner))
        .values(owner=owner, expires_at=now + ttl)
        .returning(Lease.name)
    ).first()
    if taken is not None:
        return True
    created = session.execute(
        insert_ignoring_conflicts(session, Lease, ("name",))
        .values(name=name, owner=owner, expires_at=now + ttl)
        .returning(Lease.name)
    ).first()
    return created is not None


def release_lease(session: Session, name: str, owner: str) -> None:
    """Give the lease back early so a waiting process need not wait for it to expire."""
    session.execute(delete(Lease).where(Lease.name == name, Lease.owner == owner))
