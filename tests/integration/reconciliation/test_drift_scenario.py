"""A store with one of every drift injected: exactly those alerts open, and no others.

Background traffic that agrees (a settled transfer, an inbound credit, consistent balances)
sits beside the injected faults, so a rule that fires on healthy data fails this test too.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.matching.manual import manual_match, manual_unmatch
from reconciliation.notifications.inbox import body_conflict_fingerprint
from reconciliation.notifications.subscription_check import KIND_INACTIVE
from reconciliation.notifications.subscription_check import fingerprint as subscription_fingerprint
from reconciliation.store.models import (
    ActivityCursor,
    Alert,
    Match,
    Subscription,
    Transfer,
)
from tests.integration.reconciliation.builders import Store, at

POLICY = ReconcilePolicy(
    match_window_seconds=600,
    notification_grace_seconds=300,
    projection_grace_seconds=60,
    finality_deadline_seconds=3600,
    alert_cap_per_pass=50,
)
NOW = 3600.0


def open_alerts(factory: sessionmaker[Session]) -> dict[str, str]:
    with factory() as s:
        return {
            a.fingerprint: a.kind
            for a in s.scalars(select(Alert).where(Alert.state.in_(("open", "acknowledged"))))
        }


def build(store: Store) -> dict[str, Any]:
    """The healthy background and one of each fault; returns what the test needs to refer to."""
    source, dest, other = store.holding(locator=False), store.holding(), store.holding()
    vault = store.holding(locator=False)
    # Healthy: a settled transfer, notified; an inbound credit, notified; balances that agree.
    transfer = store.transfer(source, dest, 10_000)
    _, _, receipt = store.settle(transfer, source, dest)
    store.notification("TRANSACTION_COMPLETED", source, 10_000, transfer=transfer, receipt=receipt)
    credit = store.posting(dest, 2_500, posted=at(5))
    store.notification("PAYMENT_RECEIVED", dest, 2_500, receipt=credit.receipt_ref)
    store.transfer(source, dest, 10**9, status="reservation_denied")

    # 1. The provider says money arrived; no posting ever shows it.
    phantom_receipt = uuid.uuid4()
    phantom = store.notification("PAYMENT_RECEIVED", dest, 777, receipt=phantom_receipt)
    # 2. Money arrived on a bank account; nobody told us.
    silent = store.posting(dest, 1_234, posted=at(10))
    # 3. "Completed", says the webhook; "denied", says the gateway.
    denied = store.transfer(source, dest, 5_000_000, status="reservation_denied")
    liar = store.notification(
        "TRANSACTION_COMPLETED", source, 5_000_000, transfer=denied, receipt=uuid.uuid4()
    )
    # 4. Amount altered in the notification by one minor unit.
    altered = store.posting(dest, 40_000, posted=at(20))
    altered_note = store.notification("PAYMENT_RECEIVED", dest, 40_001, receipt=altered.receipt_ref)
    # 5. The notification says USD for an NGN posting.
    unit = store.posting(dest, 3_000, posted=at(25))
    unit_note = store.notification(
        "PAYMENT_RECEIVED", dest, 3_000, receipt=unit.receipt_ref, currency="USD"
    )
    # 6. One delivery id, two bodies.
    store.delivery("evt-conflict", b'{"amount":"1.00"}')
    store.delivery("evt-conflict", b'{"amount":"9.00"}')
    store.delivery("evt-fine", b"{}")
    # 7. A transfer stuck awaiting finality for two hours.
    stuck = store.transfer(source, dest, 600, status="awaiting_finality", requested=at(-3600))
    # 8. The provider suspended our webhook; another one is healthy.
    suspended = store.subscription("SUSPENDED")
    store.subscription("ACTIVE")
    # 9. The poller of `other` has failed six times in a row.
    store.cursor(other, errors=6, polled=at(NOW))
    store.cursor(dest, errors=1, polled=at(NOW))
    # 10. `vault` holds 500 by its postings, but the gateway says 700.
    store.posting(vault, 500, posted=at(30))
    store.snapshot(vault, 700, observed=at(NOW - 10))
    # Balances that agree: source sent 10,000; dest got everything above (credits only).
    store.snapshot(source, -10_000, observed=at(NOW - 10))
    dest_total = 10_000 + 2_500 + 1_234 + 40_000 + 3_000
    store.snapshot(dest, dest_total, observed=at(NOW - 10))
    # 11. Two notifications for one posting (a duplicate under a new event id).
    twice = store.posting(other, 900, posted=at(40))
    store.notification("PAYMENT_RECEIVED", other, 900, receipt=twice.receipt_ref)
    store.notification("PAYMENT_RECEIVED", other, 900, receipt=twice.receipt_ref)
    return {
        "expected": {
            fingerprint("notification_without_posting", phantom.event_id),
            fingerprint("posting_without_notification", silent.journal_ref, silent.line_ref),
            fingerprint("status_contradiction", liar.event_id),
            fingerprint("amount_mismatch", "notification", altered_note.event_id),
            fingerprint("unit_mismatch", "notification", unit_note.event_id),
            body_conflict_fingerprint("evt-conflict"),
            fingerprint("finality_overdue", stuck.transfer_ref),
            subscription_fingerprint(KIND_INACTIVE, suspended.webhook_id),
            fingerprint("poller_stuck", other.holding_ref),
            fingerprint("balance_mismatch", vault.holding_ref),
            fingerprint("ambiguous_match", "posting", f"{twice.journal_ref}:{twice.line_ref}"),
        },
        "dest": dest,
        "other": other,
        "vault": vault,
        "phantom_receipt": phantom_receipt,
        "silent": silent,
        "stuck": stuck,
        "suspended": suspended,
        "altered": altered,
        "altered_note": altered_note,
        "liar": liar,
        "unit_note": unit_note,
        "twice": twice,
    }


@pytest.fixture
def scenario(session_factory: sessionmaker[Session]) -> tuple[Store, dict[str, Any]]:
    store = Store(session_factory)
    return store, build(store)


def test_exactly_the_injected_drifts_alert(scenario: tuple[Store, dict[str, Any]]) -> None:
    store, known = scenario

    result = run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert set(open_alerts(store.factory)) == known["expected"]
    assert {c.fingerprint for c in result.alerts.opened} == known["expected"]
    assert result.alerts.suppressed == 0

    again = run_pass(store.factory, POLICY, now=at(NOW + 30), publish=False)
    assert again.alerts.opened == again.alerts.reopened == again.alerts.resolved == []
    assert set(open_alerts(store.factory)) == known["expected"]


def test_drifts_that_can_clear_resolve_themselves(scenario: tuple[Store, dict[str, Any]]) -> None:
    store, known = scenario
    run_pass(store.factory, POLICY, now=at(NOW), publish=False)
    dest, vault = known["dest"], known["vault"]

    # The missing posting arrives; the silent credit is finally notified.
    store.posting(dest, 777, receipt=known["phantom_receipt"], posted=at(NOW + 1))
    store.notification("PAYMENT_RECEIVED", dest, 1_234, receipt=known["silent"].receipt_ref)
    with store.factory.begin() as s:
        s.execute(
            update(Transfer)
            .where(Transfer.id == known["stuck"].id)
            .values(status="completed", stage="Settled", is_terminal=True, is_successful=True)
        )
        s.execute(
            update(Subscription)
            .where(Subscription.id == known["suspended"].id)
            .values(status="ACTIVE")
        )
        s.execute(update(ActivityCursor).values(consecutive_errors=0))
        altered_row = s.scalars(
            select(Match.id).where(Match.posting_id == known["altered"].id)
        ).one()
        manual_unmatch(s, altered_row, by="ops@example.com", reason="provider amount is wrong")
        ambiguous = s.scalars(select(Alert).where(Alert.kind == "ambiguous_match")).one()
        twice_notes = ambiguous.evidence["rivals"]
        manual_match(
            s,
            posting_ids=[known["twice"].id],
            notification_id=twice_notes[0]["notificationId"],
            by="ops@example.com",
            reason="second event is the provider's duplicate",
        )
    store.snapshot(vault, 500, observed=at(NOW + 20))

    result = run_pass(store.factory, POLICY, now=at(NOW + 60), publish=False)

    still_open = set(open_alerts(store.factory))
    # What cannot clear by itself stays: a denied transfer stays denied, a conflict stays a
    # fact, and the USD/NGN pair still disagrees. The pair a person took apart is no longer an
    # amount mismatch, but each of its items waits for a decision, under an alert of its own.
    altered = known["altered"]
    assert still_open == {
        fingerprint("status_contradiction", known["liar"].event_id),
        body_conflict_fingerprint("evt-conflict"),
        fingerprint("unit_mismatch", "notification", known["unit_note"].event_id),
        fingerprint("unmatched_by_hand", "posting", f"{altered.journal_ref}:{altered.line_ref}"),
        fingerprint("unmatched_by_hand", "notification", known["altered_note"].event_id),
    }
    resolved = {c.kind for c in result.alerts.resolved}
    assert resolved == {
        "notification_without_posting",
        "posting_without_notification",
        "amount_mismatch",
        "finality_overdue",
        KIND_INACTIVE,
        "poller_stuck",
        "balance_mismatch",
        "ambiguous_match",
    }
