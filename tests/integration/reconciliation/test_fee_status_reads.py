"""What a status read's `fees` leaves on the transfer row, in each shape a provider may send."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.db import transaction
from reconciliation.store.models import Transfer
from reconciliation.transfers.polling import (
    Backoff,
    claim_due_transfers,
    record_imported_transfer,
    record_status,
)
from tests.integration.reconciliation.builders import Store, at
from upstream.wire.transfers import Fees, TransferStatus

NGN = {"kind": "fiat", "currency": "NGN"}
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "flat": (
        {"kind": "application_fee", "bearer": "split", "amountMinorUnits": "300", "valueUnit": NGN},
        {
            "kind": "application_fee",
            "bearer": "split",
            "amountMinorUnits": "150",
            "valueUnit": NGN,
            "leg": "debit",
            "holdingRef": "h",
        },
    ),
    "nested": (
        {
            "feeKind": "application_fee",
            "paidBy": "split",
            "amount": {"minorUnits": "300", "unit": NGN},
        },
        {
            "feeKind": "application_fee",
            "paidBy": "split",
            "amount": {"minorUnits": "150", "unit": NGN},
            "leg": "withholding",
        },
    ),
    "major": (
        {"type": "application_fee", "bearer": "split", "amount": "3.00", "currency": "NGN"},
        {
            "type": "application_fee",
            "bearer": "split",
            "amount": "1.50",
            "currency": "NGN",
            "leg": "debit",
        },
    ),
}


def status(ref: uuid.UUID, totals: list[object], lines: list[object]) -> TransferStatus:
    return TransferStatus(
        transfer_ref=ref,
        status="completed",
        reason=None,
        is_terminal=True,
        is_successful=True,
        revision=3,
        fees=Fees(
            status="charged", reason="configured_fee", totals=tuple(totals), lines=tuple(lines)
        ),
    )


def polled(factory: sessionmaker[Session], transfer: Transfer, read: TransferStatus) -> Transfer:
    with factory.begin() as s:
        s.execute(update(Transfer).where(Transfer.id == transfer.id).values(is_terminal=False))
    [claim] = claim_due_transfers(factory, "test", at(0), 10)
    record_status(factory, claim, "test", read, at(1), Backoff())
    with factory() as s:
        return s.get_one(Transfer, transfer.id)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_gives_the_fee_its_kind_and_its_bearer(
    session_factory: sessionmaker[Session], shape: str
) -> None:
    store = Store(session_factory)
    transfer = store.transfer(store.holding(), store.holding(), 50_000)
    total, line = SHAPES[shape]

    row = polled(session_factory, transfer, status(transfer.transfer_ref, [total], [line, line]))

    assert (row.fee_charged_minor, row.fee_kind, row.fee_bearer) == (
        300,
        "application_fee",
        "split",
    )
    assert row.fee_status == "charged"
    assert row.fee_evidence is not None and row.fee_evidence["totals"] == [total]


def test_an_element_recon_cannot_read_leaves_the_fee_unknown_with_the_raw_evidence(
    session_factory: sessionmaker[Session],
) -> None:
    store = Store(session_factory)
    transfer = store.transfer(store.holding(), store.holding(), 50_000)
    strange = {"fee": "about three naira"}

    row = polled(session_factory, transfer, status(transfer.transfer_ref, [strange], []))

    assert row.fee_charged_minor is None
    assert row.fee_evidence is not None and row.fee_evidence["unreadable"] == [strange]


def test_the_bearer_recon_asked_for_is_kept_over_the_lines_words(
    session_factory: sessionmaker[Session],
) -> None:
    store = Store(session_factory)
    transfer = store.transfer(store.holding(), store.holding(), 50_000)
    with session_factory.begin() as s:
        s.execute(
            update(Transfer).where(Transfer.id == transfer.id).values(fee_bearer="sender_pays")
        )
    total, _ = SHAPES["flat"]

    row = polled(session_factory, transfer, status(transfer.transfer_ref, [total], []))

    assert (row.fee_bearer, row.fee_charged_minor) == ("sender_pays", 300)


def test_a_transfer_followed_from_elsewhere_takes_its_fee_from_its_first_read(
    session_factory: sessionmaker[Session],
) -> None:
    ref = uuid.uuid4()
    total, _ = SHAPES["nested"]
    with transaction(session_factory) as session:
        record_imported_transfer(session, status(ref, [total], []), at(0))
    with session_factory() as s:
        row = s.query(Transfer).filter_by(transfer_ref=ref).one()
    assert (row.fee_charged_minor, row.fee_bearer) == (300, "split")
