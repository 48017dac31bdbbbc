"""The demo's four injected faults, made real at the sandbox: one scenario, three tests.

`inject_faults` drives a running sandbox (over HTTP, with its fault injection) while recon's
embedded workers (in-process broker) discover holdings, poll postings and transfer status, and
process the webhook deliveries that a small receiver records in the inbox:

- `altered_amount` on one PAYMENT_RECEIVED      -> amount_mismatch
- `drop` on another PAYMENT_RECEIVED            -> posting_without_notification
- `same_id_other_body` on ACCOUNT_CREATED       -> delivery_body_conflict
- a transfer the rail holds (outcome `hold`)    -> finality_overdue

with a healthy credit and a healthy transfer beside them. It returns once every request has
been made; what each test waits for afterwards, and what it checks, is its own:
test_end_to_end_faults.py (exactly those alerts), tests/integration/audit/
test_rebuild_after_faults.py (a rebuild reproduces the state), tests/browser (the console).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from reconciliation import ReconcilePolicy
from reconciliation.store.db import transaction
from reconciliation.store.models import BalanceSnapshot, Holding
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
from workers import EmbeddedWorkers, start_embedded

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
#: The four alert kinds the faults become.
FAULT_KINDS = frozenset(
    {
        "posting_without_notification",
        "amount_mismatch",
        "delivery_body_conflict",
        "finality_overdue",
    }
)
#: What the payer holds once the three credits have landed (minor units).
CREDITED = 2_100_000


@pytest.fixture
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer(fast_sandbox_config()) as server:
        yield server


@pytest.fixture
def workers(
    base_env: dict[str, str], db_url: str, sandbox: SandboxServer
) -> Iterator[EmbeddedWorkers]:
    with embedded_workers(base_env, db_url, sandbox) as embedded:
        yield embedded


@contextmanager
def embedded_workers(
    base_env: dict[str, str], db_url: str, sandbox: SandboxServer
) -> Iterator[EmbeddedWorkers]:
    """recon's workers on `db_url`, pointed at the sandbox, quick to poll; the tests pass."""
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
            "RECON_RECONCILE_SECONDS": "3600",  # the tests run the passes themselves
            "RECON_SWEEP_SECONDS": "1",
            "RECON_DELIVERY_GRACE_SECONDS": "1",
        }
    )
    embedded = start_embedded(settings, lock_seconds=3)
    try:
        yield embedded
    finally:
        embedded.stop()


def past_the_deadlines() -> datetime:
    """A pass's `now` past POLICY's notification grace and finality deadline.

    The tests judge the store as it will stand once those have run out by moving the pass's
    clock (`run_pass(now=...)`), not by sleeping through them; nothing else of the workers
    judges by them (`RECON_RECONCILE_SECONDS` is an hour here).
    """
    late = max(POLICY.notification_grace_seconds, POLICY.finality_deadline_seconds) + 0.5
    return utcnow() + timedelta(seconds=late)


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


@dataclass(frozen=True, slots=True)
class FaultWorld:
    """What the scenario made: the two holdings' endpoints and the two transfers."""

    payer: object
    payee: object
    settled: uuid.UUID
    held: uuid.UUID

    @property
    def holding_refs(self) -> list[str]:
        return [self.payer.holding_ref, self.payee.holding_ref]  # type: ignore[attr-defined]


def snapshot_balances(sessions: sessionmaker[Session], total: int) -> None:
    """Have the workers read every watched balance (the tick reads only the due ones)."""
    from workers.actors import snapshot_balances as snapshot

    snapshot.send(None, True)  # every holding's
    wait_for("balance snapshots", lambda: count(sessions, BalanceSnapshot) >= total)


@contextmanager
def inject_faults(
    sandbox: SandboxServer,
    sessions: sessionmaker[Session],
    *,
    before_transfers: Callable[[], None] | None = None,
) -> Iterator[FaultWorld]:
    """Run the scenario; yields with the receiver still up, so deliveries keep arriving.

    `before_transfers` runs once the credits have landed at the sandbox (the browser suite
    takes a balance snapshot there, so the holding page has a line to draw).
    """
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
                lambda: state.posted_sum(payer.holding_ref) == CREDITED,
            )
            if before_transfers is not None:
                before_transfers()
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
        yield FaultWorld(payer=payer, payee=payee, settled=refs[0], held=refs[1])
