"""A rebuild after the demo-like fault scenario reproduces the live state exactly.

The same world as tests/integration/reconciliation/test_end_to_end_faults.py (its fixtures: the
sandbox over HTTP with its fault injection, recon's embedded workers): an altered credit, a
dropped credit, a second body under one delivery id, a transfer the rail holds, and healthy
traffic beside them. After the live pass, the state rebuilt from the facts equals the live one,
table by table; after the held transfer settles and another pass resolves its alert, again.
"""

from __future__ import annotations

import time
import uuid

from sqlalchemy import select

from reconciliation.rebuild.run import Mode, rebuild
from reconciliation.reconcile import run_pass
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, Delivery, Holding, Notification, Transfer
from reconciliation.store.types import utcnow
from reconciliation.transfers.polling import record_created_transfer
from sandbox.endpoints import COLLECTION_CHILD
from sandbox.faults import Fault
from sandbox.server import SandboxServer
from tests.integration.reconciliation.test_end_to_end_faults import (
    EVENT_TYPES,
    POLICY,
    address,
    count,
    sandbox,
    wait_for,
    workers,
)
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.scenario import SECRET, transfer_request
from upstream.company import CompanyClient
from upstream.gateway import GatewayClient
from upstream.webhooks.payloads import configured_reader
from upstream.wire.balances import CreditRequest
from upstream.wire.common import ValueUnit
from upstream.wire.company_types import WebhookRequest
from upstream.wire.transfers import TransferAccepted
from workers.embedded import EmbeddedWorkers

__all__ = ["sandbox", "workers"]  # the fault scenario's fixtures, used by name below


def test_rebuild_reproduces_the_state_the_fault_scenario_left(
    sandbox: SandboxServer, workers: EmbeddedWorkers
) -> None:
    sessions = workers.running.runtime.sessions
    engine = workers.running.runtime.engine
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
            credit(900_000)
            faults.add_delivery(Fault(target="ACCOUNT_CREATED", kind="same_id_other_body", count=1))
            state.create_endpoint(COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", "NGN")
            wait_for("the payer's money", lambda: state.posted_sum(payer.holding_ref) == 2_100_000)
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

        def heard_everything() -> bool:
            with sessions() as s:
                statuses = {t.transfer_ref: t.status for t in s.scalars(select(Transfer))}
            return (
                (statuses.get(refs[0]), statuses.get(held)) == ("completed", "awaiting_finality")
                and count(sessions, Notification, Notification.event_type == "PAYMENT_RECEIVED")
                == 2
                and count(
                    sessions, Notification, Notification.event_type == "TRANSACTION_COMPLETED"
                )
                == 1
                and count(sessions, Delivery) >= 5
                and count(sessions, Delivery, Delivery.state == "pending") == 0
            )

        wait_for("the store to hear everything", heard_everything)
        time.sleep(POLICY.finality_deadline_seconds + 0.5)
        # The scheduler's own pass at start-up may still hold the lease: wait for ours to run.
        wait_for("a pass of our own", lambda: not run_pass(sessions, POLICY, publish=False).skipped)
        with sessions() as s:
            kinds = sorted(s.scalars(select(Alert.kind).where(Alert.state != "resolved")))
        assert kinds == [
            "amount_mismatch",
            "delivery_body_conflict",
            "finality_overdue",
            "posting_without_notification",
        ]
        workers.stop()  # a quiet store: nothing moves between the pass and the rebuild

        first = rebuild(engine, POLICY, configured_reader(), mode=Mode.DRY_RUN)
        assert first.comparison is not None
        assert [d.as_dict() for d in first.comparison.differences] == []

        state.finalize(str(held), "settle")
        with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
            status = gateway.transfer_status(held).value
        with transaction(sessions) as session:
            row = session.scalars(select(Transfer).where(Transfer.transfer_ref == held)).one()
            row.status, row.is_terminal, row.is_successful = status.status, True, True
        assert not run_pass(sessions, POLICY, publish=False).skipped
        second = rebuild(engine, POLICY, configured_reader(), mode=Mode.DRY_RUN)
        assert second.comparison is not None
        assert [d.as_dict() for d in second.comparison.differences] == []
        assert second.comparison.live.overall != first.comparison.live.overall
