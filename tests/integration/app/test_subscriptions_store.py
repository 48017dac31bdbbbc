"""Our webhook registration in the store: secrets sealed at rest, rotation windows, the lease."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cryptography.fernet import Fernet
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from foundation import Secret, SecretBox
from reconciliation.notifications import subscriptions
from reconciliation.store.db import transaction
from reconciliation.store.models import Subscription, WebhookSecret
from reconciliation.store.types import utcnow

BOX = SecretBox((Secret(Fernet.generate_key().decode()),))


@dataclass(frozen=True)
class Listed:
    """A webhook as the company API lists it."""

    webhook_id: str
    url: str = "https://recon.example/webhooks/company"
    event_types: tuple[str, ...] = ("PAYMENT_RECEIVED",)
    status: str = "ACTIVE"
    description: str | None = "recon"
    last_triggered: datetime | None = None
    total_deliveries: int | None = 3
    successful_deliveries: int | None = 2
    failed_deliveries: int | None = 1
    extra: dict[str, str] = field(default_factory=dict)


def test_secrets_are_sealed_at_rest(session_factory: sessionmaker[Session]) -> None:
    plain = "whsec_c2VjcmV0LW5vYm9keS1tYXktcmVhZC1pbi10aGUtZGI="
    with transaction(session_factory) as session:
        subscriptions.store_secret(session, BOX, Secret(plain))
    with session_factory() as session:
        raw = session.execute(text("SELECT secret_encrypted FROM webhook_secrets")).scalar_one()
        assert plain not in raw
        assert plain[6:] not in raw
        assert [s.reveal() for s in subscriptions.accepted_secrets(session, BOX)] == [plain]


def test_a_secret_sealed_with_an_unknown_key_is_skipped(
    session_factory: sessionmaker[Session],
) -> None:
    other = SecretBox((Secret(Fernet.generate_key().decode()),))
    with transaction(session_factory) as session:
        subscriptions.store_secret(session, other, Secret("whsec_b2xk"))
        subscriptions.store_secret(session, BOX, Secret("whsec_bmV3"))
    with session_factory() as session:
        assert [s.reveal() for s in subscriptions.accepted_secrets(session, BOX)] == ["whsec_bmV3"]


def test_rotation_keeps_old_secrets_for_the_overlap_only(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as session:
        old_hook = subscriptions.record_webhook(session, Listed("wh_old"), registered_by_recon=True)
        subscriptions.store_secret(session, BOX, Secret("whsec_b2xk"), subscription_id=old_hook.id)
        new_hook = subscriptions.record_webhook(session, Listed("wh_new"), registered_by_recon=True)
        new = subscriptions.store_secret(
            session, BOX, Secret("whsec_bmV3"), subscription_id=new_hook.id
        )
        changed = subscriptions.retire_all_but(
            session,
            keep_secret_id=new.id,
            keep_subscription_id=new_hook.id,
            overlap=timedelta(hours=1),
        )
    assert changed == 1
    now = utcnow()
    with session_factory() as session:
        during = subscriptions.accepted_secrets(session, BOX, now + timedelta(minutes=59))
        after = subscriptions.accepted_secrets(session, BOX, now + timedelta(minutes=61))
        retired = {s.webhook_id: s.retired_at for s in subscriptions.list_subscriptions(session)}
        counts = subscriptions.secret_counts(session, now + timedelta(minutes=61))
    assert sorted(s.reveal() for s in during) == ["whsec_b2xk", "whsec_bmV3"]
    assert [s.reveal() for s in after] == ["whsec_bmV3"]
    assert retired["wh_old"] is not None
    assert retired["wh_new"] is None
    assert counts == {new_hook.id: 1}


def test_record_webhook_refreshes_counters_and_keeps_who_registered_it(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as session:
        subscriptions.record_webhook(session, Listed("wh_1"), registered_by_recon=True)
    with transaction(session_factory) as session:
        subscriptions.record_webhook(
            session,
            Listed("wh_1", status="SUSPENDED", failed_deliveries=20, total_deliveries=22),
            registered_by_recon=False,
        )
    with session_factory() as session:
        [row] = session.scalars(select(Subscription)).all()
    assert (row.status, row.failed_deliveries, row.total_deliveries) == ("SUSPENDED", 20, 22)
    assert row.registered_by_recon is True
    assert row.event_types == {subscriptions.EVENT_TYPES_KEY: ["PAYMENT_RECEIVED"]}
    assert row.checked_at is not None


def test_lease_has_one_holder_among_racers(session_factory: sessionmaker[Session]) -> None:
    barrier = threading.Barrier(6)
    winners: list[str] = []

    def race(owner: str) -> None:
        barrier.wait()
        try:
            with transaction(session_factory) as session:
                if subscriptions.take_lease(session, "test-lease", owner, timedelta(minutes=1)):
                    winners.append(owner)
        except Exception:  # noqa: BLE001 - a loser may also lose on the unique key
            return

    threads = [threading.Thread(target=race, args=(f"p{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1


def test_lease_is_reentrant_expires_and_can_be_released(
    session_factory: sessionmaker[Session],
) -> None:
    minute = timedelta(minutes=1)
    with transaction(session_factory) as session:
        assert subscriptions.take_lease(session, "l", "a", minute)
        assert subscriptions.take_lease(session, "l", "a", minute)
        assert not subscriptions.take_lease(session, "l", "b", minute)
    with transaction(session_factory) as session:
        subscriptions.release_lease(session, "l", "a")
        assert subscriptions.take_lease(session, "l", "b", -minute)  # taken, already expired
        assert subscriptions.take_lease(session, "l", "c", minute)


def test_unlinked_secret_is_accepted_then_linked(session_factory: sessionmaker[Session]) -> None:
    """A secret stored before its registration completed is valid before and after linking."""
    with transaction(session_factory) as session:
        secret = subscriptions.store_secret(session, BOX, Secret("whsec_bGlua2Vk"))
    with session_factory() as session:
        assert len(subscriptions.accepted_secrets(session, BOX)) == 1
        assert subscriptions.secret_counts(session) == {None: 1}
    with transaction(session_factory) as session:
        hook = subscriptions.record_webhook(session, Listed("wh_l"), registered_by_recon=True)
        subscriptions.link_secret(session, secret.id, hook.id)
    with session_factory() as session:
        assert session.get(WebhookSecret, secret.id).subscription_id == hook.id  # type: ignore[union-attr]
