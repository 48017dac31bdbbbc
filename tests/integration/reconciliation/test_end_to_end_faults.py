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
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from foundation.settings import load_settings
from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.notifications.inbox import body_conflict_fingerprint
from reconciliation.policy import ReconcilePolicy
from reconciliation.reconcile import run_pass
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, Delivery, Holding, Notification, Posting, Transfer
from reconciliation.store.types import utcnow
from reconciliation.transfers.polling import record_created_transfer
from sandbox.endpoints import COLLECTION_CHILD
from sandbox.faults import Fault
from sandbox.server import SandboxServer
from tests.integration.workers.conftest import fast_sandbox_config
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.ledger_compare import sandbox_ledger, stored_ledger
from tests.integration.workers.scenario import SECRET, transfer_request
from upstream.company import CompanyClient
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import HoldingAddress, ValueUnit
from upstream.wire.company_types import WebhookRequest
from upstream.wire.transfers import TransferAccepted
from workers.embedded import EmbeddedWorkers, start_embedded

#: Short thresholds, so the injected gaps become drift within the test's time.
POLICY = ReconcilePolicy(
    notification_grace_seconds=1,
    finality_deadline_seconds=2,
    projection_grace_seconds=60,
    match_window_seconds=600,
)
EVENT_TYPES = [
    "PAYMENT_RECEIVED",
    "TRANSACTION_COMPLETED",
    "TRANSACTION_FAILED",
    "ACCOUNT_CREATED",
    "KYC_VERIFIED",
]


@pytest.fixture
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(fast_sandbox_config()) as server:
        yield server


@pytest.fixture
def workers(
    base_env: dict[str, str], db_url: str, sandbox: SandboxServer
) -> Iterator[EmbeddedWorkers]:
    settings = load_settings(
        {
            **base_env,
            "DATABASE_URL": db_url,
            "RECON_GATEWAY_URL": sandbox.base_url,
            "RECON_GATEWAY_RPS": "1000",
            "RECON_POLL_ACTIVITY_SECONDS": "0.5",
            "RECON_POLL_TRANSFERS_SECONDS": "0.3",
            "RECON_SNAPSHOT_BALANCES_SECONDS": "3600",
            "RECON_DISCOVER_HOLDINGS_SECONDS": "3600",
            "RECON_CHECK_SUBSCRIPTION_SECONDS": "3600",
            "RECON_RECONCILE_SECONDS": "3600",  # the test runs the passes itself
            "RECON_SWEEP_SECONDS": "1",
            "RECON_DELIVERY_GRACE_SECONDS": "1",
        }
    )
    embedded = start_embedded(settings, lock_seconds=3)
    yield embedded
    embedded.stop()


def wait_for(what: str, done: Callable[[], bool | list[str]], seconds: float = 30.0) -> None:
    """Poll until `done` is true (or returns no problems); fail saying what is still missing."""
    deadline = time.monotonic() + seconds
    outcome = done()
    while outcome is False or (isinstance(outcome, list) and outcome):
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {outcome}"
        time.sleep(0.1)
        outcome = done()


def address(ep: object) -> HoldingAddress:
    return HoldingAddress(
        account_ref=uuid.UUID(ep.account_ref),  # type: ignore[attr-defined]
        endpoint_ref=uuid.UUID(ep.endpoint_ref),  # type: ignore[attr-defined]
        holding_ref=uuid.UUID(ep.holding_ref),  # type: ignore[attr-defined]
    )


def count(sessions: sessionmaker[Session], model: type, *where: object) -> int:
    with sessions() as s:
        return int(s.scalar(select(func.count()).select_from(model).where(*where)) or 0)  # type: ignore[arg-type]


def open_alerts(sessions: sessionmaker[Session]) -> set[str]:
    with sessions() as s:
        return set(s.scalars(select(Alert.fingerprint).where(Alert.state != "resolved")))


def test_sandbox_faults_become_exactly_their_alerts(
    sandbox: SandboxServer, workers: EmbeddedWorkers
) -> None:
    sessions = workers.running.runtime.sessions
    state = sandbox.state
    payer = state.create_endpoint(
        COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", "NGN", emit=False
    )
    payee = state.create_endpoint(
        COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", "NGN", emit=False
    )
    with inbox_receiver(sessions) as url:
        with CompanyClient(
            sandbox.base_url, "ck_test_recon", sandbox.config.company_app_id
        ) as company:
            company.register_webhook(
                WebhookRequest(url=url, event_types=EVENT_TYPES, secret=SECRET)
            )
        from workers.actors import discover_holdings

        discover_holdings.send()
        wait_for("holdings discovered", lambda: count(sessions, Holding) == 2)

        faults = state.faults
        with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:

            def credit(amount: int) -> None:
                gateway.simulate_inbound_credit(
                    CreditRequest(
                        target=address(payer),
                        value_unit=ValueUnit.fiat("NGN"),
                        amount_minor_units=amount,
                    )
                )

            faults.add_delivery(Fault(target="PAYMENT_RECEIVED", kind="altered_amount", count=1))
            credit(500_000)
            wait_for("the altered credit", lambda: faults.delivery_faults[-1].fired == 1)
            faults.add_delivery(Fault(target="PAYMENT_RECEIVED", kind="drop", count=1))
            credit(700_000)
            wait_for("the dropped credit", lambda: faults.delivery_faults[-1].fired == 1)
            credit(900_000)  # healthy
            faults.add_delivery(Fault(target="ACCOUNT_CREATED", kind="same_id_other_body", count=1))
            state.create_endpoint(COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", "NGN")
            wait_for(
                "the payer's money to land",
                lambda: state.posted_sum(payer.holding_ref) == 2_100_000,
            )

            refs = []
            for amount, outcome in ((100_000, "settle"), (200_000, "hold")):
                state.outcomes.queue_next(outcome)  # type: ignore[arg-type]
                created = gateway.create_transfer(
                    transfer_request(address(payer), address(payee), amount)
                )
                assert isinstance(created, TransferAccepted)
                with transaction(sessions) as session:
                    record_created_transfer(session, created.transfer, utcnow())
                refs.append(created.transfer_ref)
        held = refs[1]

        def still_missing() -> list[str]:
            holdings = [payer.holding_ref, payee.holding_ref]
            missing = []
            if stored_ledger(sessions) != sandbox_ledger(state, holdings):
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
        time.sleep(POLICY.finality_deadline_seconds + 0.5)  # let the grace and the deadline pass

        run_pass(sessions, POLICY, publish=False)

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
                and stored_ledger(sessions)
                == sandbox_ledger(state, [payer.holding_ref, payee.holding_ref])
            ),
        )
        result = run_pass(sessions, POLICY, publish=False)

    assert [c.kind for c in result.alerts.resolved] == ["finality_overdue"]
    assert result.alerts.opened == result.alerts.reopened == []
    assert fingerprint("finality_overdue", held) not in open_alerts(sessions)
