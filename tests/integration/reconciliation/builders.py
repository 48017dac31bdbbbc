"""Store rows for reconciliation tests: the three streams, built directly in the store.

Each builder writes one realistic row (refs as the provider would send them) and returns it, so
a test reads as the story it sets up: "a transfer settled as two legs, and the provider told us
on the source account".
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.models import (
    ActivityCursor,
    BalanceSnapshot,
    Delivery,
    Holding,
    Locator,
    Notification,
    Posting,
    Subscription,
    Transfer,
)

T = TypeVar("T")

#: The fixed "now" of scenarios: far from any real clock, so tests never depend on it.
T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@dataclass
class Store:
    """Builds rows in one store; every method commits, as the ingesting processes would."""

    factory: sessionmaker[Session]
    _account_numbers: int = field(default=1_000_000_000)
    #: holding id -> the bank account number of its locator
    numbers: dict[int, str] = field(default_factory=dict)

    def _add(self, row: T) -> T:
        with self.factory.begin() as session:
            session.add(row)
            session.flush()
            session.expunge(row)
        return row

    def holding(
        self, *, locator: bool = True, currency: str = "NGN", name: str = "Test"
    ) -> Holding:
        holding = self._add(
            Holding(
                account_ref=uuid.uuid4(),
                endpoint_ref=uuid.uuid4(),
                holding_ref=uuid.uuid4(),
                currency=currency,
                discovered_at=T0,
                updated_at=T0,
            )
        )
        if locator:
            self._account_numbers += 1
            number = str(self._account_numbers)
            self._add(
                Locator(
                    holding_id=holding.id,
                    locator_ref=uuid.uuid4(),
                    form="nigerian_bank_account",
                    display=f"000:{number}:{name}",
                    bank_code="000",
                    account_number=number,
                    account_name=name,
                )
            )
            self.numbers[holding.id] = number
        return holding

    def posting(
        self,
        holding: Holding,
        amount: int,
        *,
        side: str = "credit",
        receipt: uuid.UUID | None = None,
        journal: uuid.UUID | None = None,
        posted: datetime | None = None,
        currency: str | None = None,
        kind: str = "transfer_settlement",
    ) -> Posting:
        return self._add(
            Posting(
                journal_ref=journal or uuid.uuid4(),
                line_ref=uuid.uuid4(),
                receipt_ref=receipt or uuid.uuid4(),
                holding_id=holding.id,
                posted_at=posted or T0,
                side=side,
                effect="increase" if side == "credit" else "decrease",
                kind=kind,
                amount_minor=amount,
                currency=currency or holding.currency,
                partition="customer_liability",
                normal_side="credit_normal",
                ingested_at=posted or T0,
            )
        )

    def transfer(
        self,
        source: Holding,
        dest: Holding,
        amount: int,
        *,
        status: str = "completed",
        requested: datetime | None = None,
        currency: str | None = None,
    ) -> Transfer:
        terminal = status != "awaiting_finality"
        stage = {
            "completed": "Settled",
            "failed": "Failed",
            "reservation_denied": "ReservationDenied",
            "awaiting_finality": "PrincipalReserved",
        }[status]
        return self._add(
            Transfer(
                transfer_ref=uuid.uuid4(),
                source_account_ref=source.account_ref,
                source_endpoint_ref=source.endpoint_ref,
                source_holding_ref=source.holding_ref,
                dest_account_ref=dest.account_ref,
                dest_endpoint_ref=dest.endpoint_ref,
                dest_holding_ref=dest.holding_ref,
                currency=currency or source.currency,
                amount_minor=amount,
                stage=stage,
                status=status,
                is_terminal=terminal,
                is_successful=status == "completed" if terminal else False,
                requested_at=requested or T0,
                decided_at=requested or T0,
                origin="created",
                created_at=requested or T0,
                updated_at=requested or T0,
            )
        )

    def settle(
        self, transfer: Transfer, source: Holding, dest: Holding, *, posted: datetime | None = None
    ) -> tuple[Posting, Posting, uuid.UUID]:
        """Both legs of a settled transfer, one journal and one receipt."""
        receipt, journal = uuid.uuid4(), uuid.uuid4()
        assert transfer.amount_minor is not None
        debit = self.posting(
            source,
            transfer.amount_minor,
            side="debit",
            receipt=receipt,
            journal=journal,
            posted=posted,
        )
        credit = self.posting(
            dest,
            transfer.amount_minor,
            side="credit",
            receipt=receipt,
            journal=journal,
            posted=posted,
        )
        return debit, credit, receipt

    def notification(
        self,
        event: str,
        holding: Holding | None,
        amount: int | None,
        *,
        transfer: Transfer | None = None,
        receipt: uuid.UUID | None = None,
        occurred: datetime | None = None,
        currency: str | None = None,
        account_number: str | None = None,
        event_id: str | None = None,
    ) -> Notification:
        status = {"TRANSACTION_FAILED": "FAILED"}.get(event, "SUCCESSFUL")
        return self._add(
            Notification(
                event_id=event_id or str(uuid.uuid4()),
                event_type=event,
                transfer_ref=transfer.transfer_ref if transfer else None,
                receipt_ref=receipt,
                account_ref=holding.account_ref if holding else None,
                endpoint_ref=holding.endpoint_ref if holding else None,
                holding_ref=holding.holding_ref if holding else None,
                account_number=account_number
                or (self.numbers.get(holding.id) if holding else None),
                amount_minor=amount,
                currency=currency or (holding.currency if holding else None),
                claimed_status=status,
                occurred_at=occurred or T0,
                created_at=occurred or T0,
            )
        )

    def snapshot(self, holding: Holding, settled: int, *, observed: datetime) -> BalanceSnapshot:
        return self._add(
            BalanceSnapshot(
                holding_id=holding.id,
                settled_minor=settled,
                available_minor=settled,
                reserved_minor=0,
                projection_state="Projected",
                observed_at=observed,
            )
        )

    def cursor(self, holding: Holding, *, errors: int = 0, polled: datetime | None = None) -> None:
        self._add(
            ActivityCursor(
                holding_id=holding.id,
                consecutive_errors=errors,
                last_polled_at=polled,
                last_advanced_at=polled,
            )
        )

    def subscription(self, status: str = "ACTIVE") -> Subscription:
        return self._add(
            Subscription(
                webhook_id=f"wh_{uuid.uuid4().hex[:12]}",
                url="http://127.0.0.1:8000/webhooks/company",
                event_types={"types": ["PAYMENT_RECEIVED"]},
                status=status,
                created_at=T0,
            )
        )

    def delivery(
        self, delivery_id: str, body: bytes, *, received: datetime | None = None
    ) -> Delivery:
        import hashlib

        return self._add(
            Delivery(
                delivery_id=delivery_id,
                body_sha256=hashlib.sha256(body).hexdigest(),
                body=body,
                headers={},
                scheme="standard",
                received_at=received or T0,
                state="processed",
            )
        )
