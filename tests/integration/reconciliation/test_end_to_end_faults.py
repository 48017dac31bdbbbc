"""Faults injected at the real sandbox, carried by the real workers, become exactly their alerts.

The sandbox runs over HTTP with its fault injection; recon's embedded workers (in-process
broker) discover holdings, poll postings and transfer status, and process webhook deliveries
that a small receiver records in the inbox. The test knows which drifts it injected:

- `altered_amount` on one PAYMENT_RECEIVED      -> amount_mismatch
- `drop` on another PAYMENT_RECEIVED            -> posting_without_notification
- `same_id_other_body` on ACCOUNT_CREATED       -> delivery_body_conflict
- a transfer the rail holds (outcome `hold`)    -> finality_overdue

and a healthy credit and a healthy transfer beside them. After one pass, exactly those four
alerts are open; when the held transfer settles, finality_overdue resolves itself and nothing
new opens.

It runs twice: with the sandbox as our first guesses, and as a provider whose Standard Webhooks
bodies carry `amountMinorUnits` and no status anywhere (`body_outcome=event-type`): every
delivery must still be understood, and no credit raise a false posting_without_notification.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.notifications.inbox import body_conflict_fingerprint
from reconciliation.store.models import Alert, Delivery, Notification, Posting, Transfer
from sandbox.server import SandboxServer
from sandbox.variants import parse_variant
from tests.integration.reconciliation.fault_world import (
    POLICY,
    count,
    inject_faults,
    past_the_deadlines,
    wait_for,
    workers,
)
from tests.integration.workers.conftest import fast_sandbox_config
from tests.integration.workers.ledger_compare import ledger_heard
from workers import EmbeddedWorkers

__all__ = ["workers"]  # the fault world's fixture, used by name below

#: The webhook side of the provider issue #25 measured: Standard Webhooks, its own message ids,
#: minor-unit strings, and the outcome said by the event type only.
WITHOUT_STATUS = (
    "recon,payload_shape=standard-webhooks,delivery_id=message-id,body_outcome=event-type"
)


@pytest.fixture(params=["recon", WITHOUT_STATUS], ids=["status", "event-type"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[SandboxServer]:
    variant = parse_variant(request.param)
    with SandboxServer(fast_sandbox_config(variant=variant)) as server:
        yield server


def open_alerts(sessions: sessionmaker[Session]) -> set[str]:
    with sessions() as s:
        return set(s.scalars(select(Alert.fingerprint).where(Alert.state != "resolved")))


def test_sandbox_faults_become_exactly_their_alerts(
    sandbox: SandboxServer, workers: EmbeddedWorkers
) -> None:
    sessions = workers.running.runtime.sessions
    state = sandbox.state
    with inject_faults(sandbox, sessions) as world:
        held, refs = world.held, [world.settled, world.held]

        def still_missing() -> list[str]:
            holdings = world.holding_refs
            missing = []
            if not ledger_heard(sessions, state, holdings):
                missing.append("ledger")
            with sessions() as s:
                statuses = {t.transfer_ref: t.status for t in s.scalars(select(Transfer))}
            if (statuses.get(refs[0]), statuses.get(held)) != ("completed", "awaiting_finality"):
                missing.append(f"transfer statuses {statuses}")
            for event, want in (("PAYMENT_RECEIVED", 2), ("TRANSACTION_COMPLETED", 1)):
                got = count(sessions, Notification, Notification.event_type == event)
                if got != want:
                    missing.append(f"{got} {event} notifications")
            if count(sessions, Delivery) < 5:  # 2 credits, the completed transfer, 2 bodies
                missing.append(f"{count(sessions, Delivery)} deliveries")
            return missing

        wait_for("the store to hear everything", still_missing)
        run_pass(sessions, POLICY, publish=False, now=past_the_deadlines())

        assert count(sessions, Delivery, Delivery.shape_problem.is_not(None)) == 0
        if state.config.variant.body_outcome == "event-type":
            assert not [a for a in state.deliveries if b'"status"' in a.body]
        with sessions() as s:
            altered = s.scalars(
                select(Notification.event_id).where(Notification.amount_minor == 500_001)
            ).one()
            silent = s.scalars(select(Posting).where(Posting.amount_minor == 700_000)).one()
            conflict_id = s.scalars(
                select(Delivery.delivery_id).where(Delivery.event_type == "ACCOUNT_CREATED")
            ).first()
        assert conflict_id is not None
        assert open_alerts(sessions) == {
            fingerprint("amount_mismatch", "notification", altered),
            fingerprint("posting_without_notification", silent.journal_ref, silent.line_ref),
            body_conflict_fingerprint(conflict_id),
            fingerprint("finality_overdue", held),
        }

        state.finalize(str(held), "settle")
        wait_for(
            "the held transfer to settle in the store",
            lambda: (
                count(sessions, Transfer, Transfer.status == "completed") == 2
                and count(
                    sessions, Notification, Notification.event_type == "TRANSACTION_COMPLETED"
                )
                == 2
                and ledger_heard(sessions, state, world.holding_refs)
            ),
        )
        result = run_pass(sessions, POLICY, publish=False, now=past_the_deadlines())

    assert [c.kind for c in result.alerts.resolved] == ["finality_overdue"]
    assert result.alerts.opened == result.alerts.reopened == []
    assert fingerprint("finality_overdue", held) not in open_alerts(sessions)
