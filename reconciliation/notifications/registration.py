"""Self-registration at the company API: one ACTIVE webhook for our receiver, never two.

`ensure_registered` lists the company's webhooks and registers RECON_PUBLIC_URL + the receiver
path for all five event types only when no ACTIVE webhook points there already. Several web
processes starting together would all see "none" and all register, so list-and-register runs
under a lease in the store. The new secret is stored (encrypted) before the registration request
carries it out: if we die in between, deliveries signed with it are still accepted.

`rotate_secret` registers a new webhook with a new secret (the company API has no way to change
a webhook's secret) and keeps accepting the old secrets for RECON_WEBHOOK_ROTATION_OVERLAP_SECONDS.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

import structlog
from sqlalchemy.orm import Session, sessionmaker

from foundation import Secret, SecretBox, Settings
from reconciliation.notifications.subscriptions import (
    REGISTRATION_LEASE,
    link_secret,
    list_subscriptions,
    record_webhook,
    release_lease,
    retire_all_but,
    store_secret,
    take_lease,
)
from reconciliation.store.db import transaction
from reconciliation.store.models import Subscription
from upstream import (
    EVENT_TYPES,
    CompanyClient,
    Webhook,
    WebhookRequest,
    WebhookRetryPolicy,
    new_secret,
)

#: What we ask the provider to do when a delivery fails: 12 attempts, 30 s doubling, about
#: 17 hours in all, long enough to ride out a database outage overnight (docs/decisions.md).
RETRY_POLICY: Final = WebhookRetryPolicy(
    max_attempts=12, initial_delay_seconds=30.0, backoff_multiplier=2.0
)
#: How long a registration may hold the lease before another process may take over.
LEASE_TTL: Final = timedelta(seconds=120)
#: Seconds between two attempts to take a busy lease.
LEASE_POLL_SECONDS: Final = 0.5
#: The webhook status that counts as "already registered".
ACTIVE: Final = "ACTIVE"

log = structlog.get_logger(__name__)


class RegistrationBusyError(Exception):
    """Another process is registering right now; try again shortly."""


@dataclass(frozen=True, slots=True)
class RegistrationResult:
    """Which webhook serves our receiver, and whether this call created it."""

    webhook_id: str
    url: str
    status: str
    created: bool


#: What a caller writes in the transaction that records which webhook serves our receiver,
#: given that result: the operator's audit row, committed with what the store learnt.
WithRegistration = Callable[[Session, RegistrationResult], None]


def receiver_url(settings: Settings) -> str:
    """The URL the provider must deliver to: RECON_PUBLIC_URL + RECON_WEBHOOK_PATH."""
    return settings.web.public_url.rstrip("/") + settings.webhooks.path


def company_client(settings: Settings) -> CompanyClient:
    """A company API client from the settings (close it when done)."""
    return CompanyClient(
        settings.provider.company_url,
        settings.provider.company_api_key.reveal(),
        settings.provider.company_app_id,
    )


def process_owner() -> str:
    """A lease owner name unique to this process: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@contextmanager
def registration_lease(
    factory: sessionmaker[Session], owner: str, wait_seconds: float = 0.0
) -> Iterator[None]:
    """Hold the registration lease for the block, waiting up to `wait_seconds` for it."""
    deadline = time.monotonic() + wait_seconds
    while True:
        with transaction(factory) as session:
            taken = take_lease(session, REGISTRATION_LEASE, owner, LEASE_TTL)
        if taken:
            break
        if time.monotonic() >= deadline:
            raise RegistrationBusyError(
                "another recon process is registering the webhook right now; try again shortly"
            )
        time.sleep(LEASE_POLL_SECONDS)
    try:
        yield
    finally:
        with transaction(factory) as session:
            release_lease(session, REGISTRATION_LEASE, owner)


def ensure_registered(
    settings: Settings,
    factory: sessionmaker[Session],
    client: CompanyClient,
    *,
    owner: str,
    wait_seconds: float = 0.0,
    with_registration: WithRegistration | None = None,
) -> RegistrationResult:
    """Make sure one ACTIVE webhook delivers to our receiver; register it if none does.

    `with_registration` is written in the transaction that records the webhook found or made.
    """
    url = receiver_url(settings)
    with registration_lease(factory, owner, wait_seconds):
        existing = _active_at(client, url)
        if existing:
            found = RegistrationResult(existing[0].webhook_id, url, existing[0].status, False)
            with transaction(factory) as session:
                for webhook in existing:
                    record_webhook(session, webhook, registered_by_recon=False)
                if with_registration is not None:
                    with_registration(session, found)
            _warn_if_incomplete(existing[0])
            return found
        made = _register(
            settings, factory, client, url, "recon webhook receiver", with_registration
        )
    log.info("webhook.registered", webhook_id=made.webhook_id, url=url)
    return made


def rotate_secret(
    settings: Settings,
    factory: sessionmaker[Session],
    client: CompanyClient,
    *,
    owner: str,
    wait_seconds: float = 30.0,
    with_registration: WithRegistration | None = None,
) -> RegistrationResult:
    """Register a new webhook with a new secret; older secrets stay accepted for the overlap.

    `with_registration` is written in the transaction that records the new webhook.
    """
    url = receiver_url(settings)
    overlap = timedelta(seconds=settings.webhooks.rotation_overlap_seconds)
    description = "recon webhook receiver (rotated secret)"
    with registration_lease(factory, owner, wait_seconds):
        made = _register(settings, factory, client, url, description, with_registration, overlap)
    log.info(
        "webhook.rotated",
        webhook_id=made.webhook_id,
        url=url,
        old_secrets_accepted_for_seconds=settings.webhooks.rotation_overlap_seconds,
    )
    return made


def sync_webhooks(
    settings: Settings, factory: sessionmaker[Session], client: CompanyClient
) -> list[Subscription]:
    """Refresh status and counters of the webhooks at our URL and of those we already know."""
    url = receiver_url(settings)
    listing = client.list_webhooks()
    with transaction(factory) as session:
        known = {s.webhook_id for s in list_subscriptions(session)}
        for webhook in listing.webhooks:
            if webhook.webhook_id in known or _same_url(webhook.url, url):
                record_webhook(session, webhook, registered_by_recon=False)
        return list_subscriptions(session)


def _register(
    settings: Settings,
    factory: sessionmaker[Session],
    client: CompanyClient,
    url: str,
    description: str,
    with_registration: WithRegistration | None,
    retire_after: timedelta | None = None,
) -> RegistrationResult:
    box = SecretBox(settings.store.secret_keys)
    secret = Secret(new_secret(settings.webhooks.signature_scheme), name="webhook secret")
    with transaction(factory) as session:
        secret_id = store_secret(session, box, secret).id
    webhook = client.register_webhook(
        WebhookRequest(
            url=url,
            event_types=EVENT_TYPES,
            secret=secret.reveal(),
            description=description,
            retry_policy=RETRY_POLICY,
        )
    )
    made = RegistrationResult(webhook.webhook_id, url, webhook.status, True)
    with transaction(factory) as session:
        row = record_webhook(session, webhook, registered_by_recon=True)
        link_secret(session, secret_id, row.id)
        if retire_after is not None:
            retire_all_but(
                session, keep_secret_id=secret_id, keep_subscription_id=row.id, overlap=retire_after
            )
        if with_registration is not None:
            with_registration(session, made)
    return made


def _active_at(client: CompanyClient, url: str) -> list[Webhook]:
    listing = client.list_webhooks(status=ACTIVE)
    return [w for w in listing.webhooks if w.status == ACTIVE and _same_url(w.url, url)]


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _warn_if_incomplete(webhook: Webhook) -> None:
    missing = [e for e in EVENT_TYPES if e not in webhook.event_types]
    if missing:
        log.warning(
            "webhook.missing_event_types",
            webhook_id=webhook.webhook_id,
            missing=missing,
            hint="the webhook at our URL was registered without these; rotate to replace it",
        )
