"""A small life at the provider, and the checks that recon ended up with the same story.

The scenario registers our webhook, then moves money through the real gateway API: transfers
that settle or fail, and inbound credits. The checks wait until the store agrees with the
sandbox: every money event a notification, every transfer terminal with the gateway's status,
the ledger stored exactly once, and one snapshot row per balance read.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.db import transaction
from reconciliation.store.models import BalanceSnapshot, Holding, Notification, Transfer
from reconciliation.store.types import utcnow
from reconciliation.transfers.polling import record_created_transfer
from sandbox.bulk import build_bulk
from sandbox.server import SandboxServer
from tests.integration.workers.ledger_compare import sandbox_ledger, stored_ledger
from tests.integration.workers.sandbox_probe import RequestProbe
from upstream.company import CompanyClient
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import Destination, HoldingAddress, ValueUnit
from upstream.wire.company_types import WebhookRequest
from upstream.wire.transfers import TransferAccepted, TransferDenied, TransferRequest

SECRET = "whsec_" + base64.b64encode(b"workers-end-to-end-secret-bytes!").decode()
MONEY_EVENTS = ("PAYMENT_RECEIVED", "TRANSACTION_COMPLETED", "TRANSACTION_FAILED")


@dataclass
class Scenario:
    holdings: list[dict[str, str]]
    transfers: list[uuid.UUID] = field(default_factory=list)


def address(ref: dict[str, str]) -> HoldingAddress:
    return HoldingAddress(
        account_ref=uuid.UUID(ref["accountRef"]),
        endpoint_ref=uuid.UUID(ref["endpointRef"]),
        holding_ref=uuid.UUID(ref["holdingRef"]),
    )


def prepare(sandbox: SandboxServer, receiver_url: str) -> Scenario:
    """Holdings with a history, and our webhook registered; nothing moving yet."""
    with CompanyClient(sandbox.base_url, "ck_test_recon", sandbox.config.company_app_id) as company:
        company.register_webhook(
            WebhookRequest(url=receiver_url, event_types=list(MONEY_EVENTS), secret=SECRET)
        )
    return Scenario(holdings=build_bulk(sandbox.state, holdings=3, postings=330, seed=31))


def move_money(sandbox: SandboxServer, scenario: Scenario, sessions: sessionmaker[Session]) -> None:
    """Two transfers that settle, one that fails, one denied, and two inbound credits.

    The transfers are recorded in the store as recon's own code records what it creates.
    """
    source, target, collection = (address(h) for h in scenario.holdings)
    with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
        for amount in (1_000, 2_000, 3_000, 10**15):
            created = gateway.create_transfer(transfer_request(source, target, amount))
            assert isinstance(created, TransferAccepted | TransferDenied)
            with transaction(sessions) as session:
                record_created_transfer(session, created.transfer, utcnow())
            scenario.transfers.append(created.transfer_ref)
        sandbox.state.outcomes.fix(str(scenario.transfers[2]), "fail")
        for amount in (150_050, 99):
            gateway.simulate_inbound_credit(
                CreditRequest(
                    target=collection, value_unit=ValueUnit.fiat("NGN"), amount_minor_units=amount
                )
            )


def transfer_request(
    source: HoldingAddress, target: HoldingAddress, amount: int
) -> TransferRequest:
    return TransferRequest(
        source=source,
        destination=Destination.internal(target),
        value_unit=ValueUnit.fiat("NGN"),
        amount_minor_units=amount,
    )


def differences(
    sandbox: SandboxServer, probe: RequestProbe, sessions: sessionmaker[Session], scenario: Scenario
) -> list[str]:
    """What still differs between the store and the sandbox (empty when they agree)."""
    problems: list[str] = []
    with sandbox.state.lock:
        events = [e for e in sandbox.state.events if e.get("event") in MONEY_EVENTS]
        # What the gateway's status read says now, in this provider's own words.
        said = {
            ref: sandbox.state.transfers[str(ref)].render_status() for ref in scenario.transfers
        }
    with sessions() as session:
        # The body's own id: event_id is the webhook-id header, a message id for some providers.
        notified = set(session.scalars(select(Notification.body_id)))
        transfers = {
            t.transfer_ref: (t.status, t.is_terminal) for t in session.scalars(select(Transfer))
        }
        snapshots = int(session.scalar(select(func.count()).select_from(BalanceSnapshot)) or 0)
        latest = _latest_settled(session)
    missing = [e["id"] for e in events if e["id"] not in notified]
    if missing or len(events) < 5:
        problems.append(f"{len(missing)} of {len(events)} money events not yet notifications")
    for ref, status in said.items():
        want = (status["status"], status["isTerminal"])
        if transfers.get(ref) != want:
            problems.append(f"transfer {ref}: store {transfers.get(ref)}, gateway {want}")
    if stored_ledger(sessions) != sandbox_ledger(
        sandbox.state, [h["holdingRef"] for h in scenario.holdings]
    ):
        problems.append("ledger differs")
    reads = probe.count("GET /v1/balances/current")
    if snapshots != reads:
        problems.append(f"{snapshots} snapshot rows for {reads} balance reads")
    for ref in (h["holdingRef"] for h in scenario.holdings):
        if latest.get(ref) != sandbox.state.posted_sum(ref):
            problems.append(f"holding {ref}: latest snapshot {latest.get(ref)}")
    return problems


def wait_until_agreed(check: Callable[[], list[str]], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    problems = check()
    while problems:
        if time.monotonic() > deadline:
            raise AssertionError("store and sandbox never agreed: " + "; ".join(problems))
        time.sleep(0.25)
        problems = check()


def _latest_settled(session: Session) -> dict[str, int]:
    latest: dict[str, int] = {}
    for ref, settled in session.execute(
        select(Holding.holding_ref, BalanceSnapshot.settled_minor)
        .join(Holding, Holding.id == BalanceSnapshot.holding_id)
        .order_by(BalanceSnapshot.observed_at, BalanceSnapshot.id)
    ):
        latest[str(ref)] = settled
    return latest
