"""A small store built through recon's own live paths: inbox, processing, passes, people.

Deliveries go in through `record_deliveries` (the receiver's path), become notifications through
`process_deliveries`, are matched and alerted by `run_pass`, and a person unmatches one match:
the live derived state is whatever those paths made of the facts, which is what a rebuild must
reproduce. The world holds every kind of thing the rebuild derives: three match rules, an
amount mismatch, a posting without a notification, a body no payload shape reads, a second
body under a known delivery id, a transfer waiting for finality, a person's unmatch.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.matching.manual import manual_unmatch
from reconciliation.store.db import transaction
from reconciliation.store.models import (
    BalanceSnapshot,
    Holding,
    Locator,
    Match,
    Posting,
    Transfer,
    TransferChange,
)
from tests.integration.reconciliation.through_inbox import deliver_through_inbox

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
POLICY = ReconcilePolicy(
    notification_grace_seconds=60,
    finality_deadline_seconds=600,
    projection_grace_seconds=60,
    match_window_seconds=3600,
)
ACCOUNT_NUMBER = "1000000002"


@dataclass
class World:
    """Refs a test may want to name."""

    internal: Holding
    external: Holding
    settled_ref: uuid.UUID
    pass_at: datetime


def delivery_body(event_id: str, kind: str, at: datetime, **data: object) -> bytes:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    payload = {"id": event_id, "event": kind, "createdAt": stamp, "data": data}
    return json.dumps(payload).encode()


def money_data(holding: Holding, amount: str, **refs: object) -> dict[str, object]:
    return {
        "accountRef": str(holding.account_ref),
        "endpointRef": str(holding.endpoint_ref),
        "holdingRef": str(holding.holding_ref),
        "amount": amount,
        "currency": "NGN",
        "status": "SUCCESSFUL",
        **{k: str(v) if v is not None else None for k, v in refs.items()},
    }


def posting_for(
    holding: Holding, receipt: uuid.UUID, side: str, amount: int, at: datetime
) -> Posting:
    return Posting(
        journal_ref=uuid.uuid4(),
        line_ref=uuid.uuid4(),
        receipt_ref=receipt,
        holding_id=holding.id,
        posted_at=at,
        side=side,
        effect="increase" if side == "credit" else "decrease",
        kind="transfer_settlement",
        amount_minor=amount,
        currency="NGN",
        partition="customer_liability",
        normal_side="credit_normal",
        ingested_at=at,
    )


def build_world(sessions: sessionmaker[Session]) -> World:
    """Write the facts, process the inbox, run passes, unmatch one match; return the refs."""
    settled, failed, waiting = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    r_settled, r_credit, r_silent, r_altered, r_window = (uuid.uuid4() for _ in range(5))
    with transaction(sessions) as s:
        internal = Holding(
            account_ref=uuid.uuid4(),
            endpoint_ref=uuid.uuid4(),
            holding_ref=uuid.uuid4(),
            currency="NGN",
        )
        external = Holding(
            account_ref=uuid.uuid4(),
            endpoint_ref=uuid.uuid4(),
            holding_ref=uuid.uuid4(),
            currency="NGN",
        )
        s.add_all([internal, external])
        s.flush()
        s.add(
            Locator(
                holding_id=external.id,
                locator_ref=uuid.uuid4(),
                form="nigerian_bank_account",
                display=f"000:{ACCOUNT_NUMBER}:World",
                bank_code="000",
                account_number=ACCOUNT_NUMBER,
                account_name="World",
            )
        )
        for ref, status, done in (
            (settled, "completed", True),
            (failed, "failed", True),
            (waiting, "awaiting_finality", False),
        ):
            transfer = Transfer(
                transfer_ref=ref,
                source_holding_ref=internal.holding_ref,
                dest_holding_ref=external.holding_ref,
                currency="NGN",
                amount_minor=10_000,
                status=status,
                is_terminal=done,
                is_successful=status == "completed",
                requested_at=T0,
                origin="created",
            )
            s.add(transfer)
            s.flush()
            s.add(  # its status history, as the poller keeps it
                TransferChange(
                    transfer_id=transfer.id,
                    observed_at=T0,
                    status=status,
                    is_terminal=done,
                    is_successful=transfer.is_successful,
                )
            )
        s.add_all(
            [
                posting_for(internal, r_settled, "debit", 10_000, T0 + timedelta(seconds=1)),
                posting_for(external, r_settled, "credit", 10_000, T0 + timedelta(seconds=1)),
                posting_for(external, r_credit, "credit", 50_000, T0 + timedelta(seconds=2)),
                posting_for(external, r_silent, "credit", 70_000, T0 + timedelta(seconds=3)),
                posting_for(external, r_altered, "credit", 90_000, T0 + timedelta(seconds=4)),
                posting_for(external, r_window, "credit", 30_000, T0 + timedelta(seconds=5)),
            ]
        )
        s.add(
            BalanceSnapshot(
                holding_id=external.id,
                settled_minor=250_000,
                available_minor=250_000,
                reserved_minor=0,
                observed_at=T0 + timedelta(minutes=5),
            )
        )
    at = T0 + timedelta(seconds=10)
    bodies = [
        (
            "evt-completed",
            delivery_body(
                "evt-completed",
                "TRANSACTION_COMPLETED",
                at,
                **money_data(internal, "100.00", transferRef=settled, receiptRef=r_settled),
            ),
        ),
        (
            "evt-failed",
            delivery_body(
                "evt-failed",
                "TRANSACTION_FAILED",
                at,
                **money_data(internal, "100.00", transferRef=failed, receiptRef=None)
                | {"status": "FAILED"},
            ),
        ),
        (
            "evt-credit",
            delivery_body(
                "evt-credit",
                "PAYMENT_RECEIVED",
                at,
                **money_data(external, "500.00", receiptRef=r_credit),
            ),
        ),
        (
            "evt-altered",
            delivery_body(
                "evt-altered",
                "PAYMENT_RECEIVED",
                at,
                **money_data(external, "900.01", receiptRef=r_altered),
            ),
        ),
        (
            "evt-window",
            delivery_body(
                "evt-window",
                "PAYMENT_RECEIVED",
                at,
                **money_data(external, "300.00", accountNumber=ACCOUNT_NUMBER),
            ),
        ),
        ("evt-shape", json.dumps({"kind": "something", "when": "later"}).encode()),
        (
            "evt-credit",
            delivery_body(
                "evt-credit",
                "PAYMENT_RECEIVED",
                at,
                **money_data(external, "501.00", receiptRef=r_credit),
            ),
        ),
    ]
    deliver_through_inbox(sessions, bodies, at)
    first = T0 + timedelta(minutes=10)
    run_pass(sessions, POLICY, now=first, publish=False)
    with transaction(sessions) as s:
        completed = s.scalars(select(Match).where(Match.rule == "transfer_ref")).first()
        assert completed is not None
        manual_unmatch(
            s, completed.id, by="tester", reason="the test takes this match apart", now=first
        )
    second = first + timedelta(minutes=1)
    run_pass(sessions, POLICY, now=second, publish=False)
    return World(internal=internal, external=external, settled_ref=settled, pass_at=second)
