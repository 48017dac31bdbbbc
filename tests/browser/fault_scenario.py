"""The demo's four injected faults, made real: the sandbox over HTTP, recon's embedded workers.

Built the way tests/integration/reconciliation/test_end_to_end_faults.py builds them:

- `drop` on a PAYMENT_RECEIVED            -> a posting without its notification
- `altered_amount` on a PAYMENT_RECEIVED  -> an amount mismatch
- `same_id_other_body` on ACCOUNT_CREATED -> a delivery id re-sent with another body
- a transfer the rail holds               -> finality overdue

then one reconciliation pass. `build_fault_store` returns once the four alerts are open; the
workers and the sandbox are stopped, so the store holds still while the browser looks at it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from foundation.settings import load_settings
from reconciliation.policy import ReconcilePolicy
from reconciliation.reconcile import run_pass
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, BalanceSnapshot, Delivery, Holding, Transfer
from reconciliation.store.types import utcnow
from reconciliation.transfers.polling import record_created_transfer
from sandbox.endpoints import COLLECTION_CHILD
from sandbox.faults import Fault
from sandbox.server import SandboxServer
from tests.integration.workers.conftest import fast_sandbox_config
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.scenario import SECRET, transfer_request
from upstream.company import CompanyClient
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import HoldingAddress, ValueUnit
from upstream.wire.company_types import WebhookRequest
from upstream.wire.transfers import TransferAccepted
from workers.embedded import start_embedded

#: Short thresholds, so the injected gaps become drift within the test's time.
POLICY = ReconcilePolicy(
    notification_grace_seconds=1,
    finality_deadline_seconds=2,
    projection_grace_seconds=60,
    match_window_seconds=600,
)
#: The four alert kinds the faults become.
FAULT_KINDS = frozenset(
    {
        "posting_without_notification",
        "amount_mismatch",
        "delivery_body_conflict",
        "finality_overdue",
    }
)
EVENT_TYPES = ["PAYMENT_RECEIVED", "TRANSACTION_COMPLETED", "TRANSACTION_FAILED", "ACCOUNT_CREATED"]


def wait_for(what: str, done: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _count(sessions: sessionmaker[Session], model: type, *where: object) -> int:
    with sessions() as s:
        return int(s.scalar(select(func.count()).select_from(model).where(*where)) or 0)  # type: ignore[arg-type]


def _address(ep: object) -> HoldingAddress:
    return HoldingAddress(
        account_ref=uuid.UUID(ep.account_ref),  # type: ignore[attr-defined]
        endpoint_ref=uuid.UUID(ep.endpoint_ref),  # type: ignore[attr-defined]
        holding_ref=uuid.UUID(ep.holding_ref),  # type: ignore[attr-defined]
    )


def _open_kinds(sessions: sessionmaker[Session]) -> set[str]:
    with sessions() as s:
        return set(s.scalars(select(Alert.kind).where(Alert.state != "resolved")))


def _snapshot(sessions: sessionmaker[Session], total: int) -> None:
    """Have the workers read every watched balance, as the scheduler's tick does."""
    from workers.actors import snapshot_balances

    snapshot_balances.send()
    wait_for("balance snapshots", lambda: _count(sessions, BalanceSnapshot) >= total)


def build_fault_store(base_env: dict[str, str], db_url: str) -> None:
    """Run the faulty scenario into the store at `db_url` and one pass over it."""
    with SandboxServer(fast_sandbox_config()) as sandbox:
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
                "RECON_RECONCILE_SECONDS": "3600",
                "RECON_SWEEP_SECONDS": "1",
                "RECON_DELIVERY_GRACE_SECONDS": "1",
            }
        )
        embedded = start_embedded(settings, lock_seconds=3)
        try:
            _drive(sandbox, embedded.running.runtime.sessions)
        finally:
            embedded.stop()


def _drive(sandbox: SandboxServer, sessions: sessionmaker[Session]) -> None:
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
        wait_for("holdings discovered", lambda: _count(sessions, Holding) == 2)
        faults = state.faults
        with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:

            def credit(amount: int) -> None:
                gateway.simulate_inbound_credit(
                    CreditRequest(
                        target=_address(payer),
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
            _snapshot(sessions, 2)
            for amount, outcome in ((100_000, "settle"), (200_000, "hold")):
                state.outcomes.queue_next(outcome)  # type: ignore[arg-type]
                created = gateway.create_transfer(
                    transfer_request(_address(payer), _address(payee), amount)
                )
                assert isinstance(created, TransferAccepted)
                with transaction(sessions) as session:
                    record_created_transfer(session, created.transfer, utcnow())
        wait_for(
            "the store to hear everything",
            lambda: (
                _count(sessions, Transfer, Transfer.status == "awaiting_finality") == 1
                and _count(sessions, Transfer, Transfer.status == "completed") == 1
                and _count(sessions, Delivery, Delivery.state == "quarantined") >= 1
                and _count(sessions, Delivery, Delivery.state == "pending") == 0
            ),
        )
        _snapshot(sessions, 4)  # a second balance per holding: the holding page draws a line
        time.sleep(POLICY.finality_deadline_seconds + 0.5)  # the grace and the deadline pass
        deadline = time.monotonic() + 60
        while not _open_kinds(sessions) >= FAULT_KINDS:
            assert time.monotonic() < deadline, f"open alerts: {_open_kinds(sessions)}"
            run_pass(sessions, POLICY, publish=False)
            time.sleep(0.5)
