"""Fees wherever the provider posts them: a fee leg under a receipt of its own is still the
transfer's.

Each test lays out a fee-paying transfer as such a provider does: the principal's legs under
the transfer's receipt (named by its TRANSACTION_COMPLETED), each fee leg under a receipt and
journal of its own that no notification names, the status read's fee lines naming that
receipt (in any of the three element shapes) or nothing linking the two. Before fee legs were
joined by their own evidence, every fee-paying transfer under this layout raised a false
amount_mismatch that read "0.00 NGN more ... 0.00 NGN less", and the fee posting itself was
shown nowhere.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.store.models import Holding, Match, Posting, Transfer
from reconciliation.transfers.fees import replace_fee_receipts
from tests.integration.reconciliation.builders import Store, at
from tests.integration.reconciliation.test_fee_groups import (
    AMOUNT,
    FEE,
    FEE_KIND,
    NOW,
    POLICY,
    WITHHOLDING_KIND,
    open_alerts,
    with_fee,
)

BEARERS = ["sender_pays", "receiver_pays", "application_pays", "split"]


def _line(shape: str, amount: int, receipt: uuid.UUID) -> dict[str, Any]:
    """A fee line naming its leg's receipt as each of the sandbox's shapes does."""
    if shape == "nested":
        return {
            "feeKind": "application_fee",
            "amount": {"minorUnits": str(amount), "unit": {"kind": "fiat", "currency": "NGN"}},
            "posting": {"receiptRef": str(receipt)},
        }
    if shape == "major":
        return {"type": "application_fee", "amount": "1.00", "postingReceiptRef": str(receipt)}
    return {"kind": "application_fee", "amountMinorUnits": str(amount), "receiptRef": str(receipt)}


def settle_apart(
    store: Store,
    source: Holding,
    dest: Holding,
    bearer: str,
    *,
    shape: str | None,
    amount: int = AMOUNT,
    fee: int = FEE,
    posted: float = 1,
) -> tuple[Transfer, list[Posting], list[Posting]]:
    """A settled transfer whose fee legs each have a receipt and journal of their own; its
    fee lines name those receipts in `shape` (None: nothing links them). Returns the
    transfer, its principal legs and its fee legs."""
    transfer = store.transfer(source, dest, amount)
    receipt = uuid.uuid4()
    netted = fee if bearer == "receiver_pays" else 0
    principal = [
        store.posting(source, amount, side="debit", receipt=receipt, posted=at(posted)),
        store.posting(dest, amount - netted, side="credit", receipt=receipt, posted=at(posted)),
    ]
    shares: list[tuple[Holding, int, str]] = []
    if bearer == "sender_pays":
        shares = [(source, fee, FEE_KIND)]
    elif bearer == "split":
        shares = [(source, (fee + 1) // 2, FEE_KIND), (dest, fee // 2, WITHHOLDING_KIND)]
    fee_legs = [
        store.posting(holding, value, side="debit", kind=kind, posted=at(posted))
        for holding, value, kind in shares
    ]
    store.notification("TRANSACTION_COMPLETED", source, amount, transfer=transfer, receipt=receipt)
    with_fee(store.factory, transfer, charged=fee, bearer=bearer)
    if shape is not None:
        lines = [_line(shape, leg.amount_minor, leg.receipt_ref) for leg in fee_legs]
        with store.factory.begin() as s:
            replace_fee_receipts(s, transfer.id, {"totals": [], "lines": lines})
    return transfer, principal, fee_legs


def grouped(factory: sessionmaker[Session], transfer: Transfer) -> set[int]:
    with factory() as s:
        return set(
            s.scalars(
                select(Match.posting_id).where(
                    Match.transfer_id == transfer.id, Match.unmatched_at.is_(None)
                )
            )
        )


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


@pytest.mark.parametrize("shape", ["flat", "nested", "major", None], ids=str)
@pytest.mark.parametrize("bearer", BEARERS)
def test_a_fee_under_a_receipt_of_its_own_joins_its_transfer_under_each_bearer(
    store: Store, bearer: str, shape: str | None
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer, principal, fee_legs = settle_apart(store, source, dest, bearer, shape=shape)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert open_alerts(store.factory) == {}
    assert grouped(store.factory, transfer) == {p.id for p in principal + fee_legs}


def test_a_named_receipt_wins_over_a_transfer_that_only_fits_by_amount(store: Store) -> None:
    """Two transfers of the same amount and fee in the same instant on one holding: the fee
    lines' receipts tell their fee legs apart, where holding, amount and time cannot."""
    source, dest = store.holding(locator=False), store.holding()
    first = settle_apart(store, source, dest, "sender_pays", shape="flat")
    second = settle_apart(store, source, dest, "sender_pays", shape="nested")

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert open_alerts(store.factory) == {}
    for transfer, principal, fee_legs in (first, second):
        assert grouped(store.factory, transfer) == {p.id for p in principal + fee_legs}


def test_a_whole_fee_beside_a_split_goes_to_the_transfer_whose_bearer_fixes_it(
    store: Store,
) -> None:
    """Nothing links either fee: the sender_pays fee (2,600) is also a part a split of 2,660
    would allow, but the whole share a bearer fixes is the stronger evidence."""
    source, dest = store.holding(locator=False), store.holding()
    sender = settle_apart(store, source, dest, "sender_pays", shape=None, fee=2_600)
    split = settle_apart(store, source, dest, "split", shape=None, amount=AMOUNT + 1, fee=2_660)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert open_alerts(store.factory) == {}
    for transfer, principal, fee_legs in (sender, split):
        assert grouped(store.factory, transfer) == {p.id for p in principal + fee_legs}


def test_two_transfers_alike_in_one_second_make_their_fees_an_exception_not_a_guess(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    first = settle_apart(store, source, dest, "sender_pays", shape=None)
    second = settle_apart(store, source, dest, "sender_pays", shape=None)
    fee_legs = first[2] + second[2]

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    alerts = open_alerts(store.factory)
    assert {a.kind for a in alerts.values()} == {"ambiguous_match"}, alerts
    assert len(alerts) == 2
    for alert in alerts.values():
        rivals = {r["transferRef"] for r in alert.evidence["rivals"]}
        assert rivals == {str(first[0].transfer_ref), str(second[0].transfer_ref)}
    with store.factory() as s:
        marked = set(
            s.scalars(select(Posting.match_status).where(Posting.id.in_([p.id for p in fee_legs])))
        )
    assert marked == {"exception"}
    for transfer, principal, _ in (first, second):
        assert grouped(store.factory, transfer) == {p.id for p in principal}, "no guess"


def test_a_fee_posting_that_joins_no_transfer_is_unexplained_with_its_candidates(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    # A transfer beside it whose fee the posting does not fit (another amount).
    transfer, _, _ = settle_apart(store, source, dest, "sender_pays", shape=None)
    stray = store.posting(source, FEE + 1, side="debit", kind=FEE_KIND, posted=at(2))
    # And one on a holding where no transfer charged anything.
    lonely = store.posting(
        store.holding(locator=False), 700, side="debit", kind=FEE_KIND, posted=at(2)
    )

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    alerts = open_alerts(store.factory)
    unexplained = {k: a for k, a in alerts.items() if a.kind == "fee_unexplained"}
    assert set(unexplained) == {
        fingerprint("fee_unexplained", str(p.journal_ref), str(p.line_ref)) for p in (stray, lonely)
    }
    assert set(alerts) == set(unexplained), "nothing else: the transfer's own fee joined it"
    by_posting = {a.evidence["posting"]["postingId"]: a for a in unexplained.values()}
    assert [t["transferRef"] for t in by_posting[stray.id].evidence["candidateTransfers"]] == [
        str(transfer.transfer_ref)
    ]
    assert by_posting[lonely.id].evidence["candidateTransfers"] == []
    assert "joins no transfer" in by_posting[stray.id].subject

    # A person matches the stray one to its transfer: that alert clears by itself.
    with store.factory.begin() as s:
        s.add(Match(rule="manual", posting_id=stray.id, transfer_id=transfer.id, matched_by="t"))
    run_pass(store.factory, POLICY, now=at(NOW + 60), publish=False)
    left = {a.kind for a in open_alerts(store.factory).values()}
    assert "fee_unexplained" in left
    assert fingerprint(
        "fee_unexplained", str(stray.journal_ref), str(stray.line_ref)
    ) not in open_alerts(store.factory)


def test_a_transfers_own_debit_without_its_notification_is_not_called_a_fee(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    settle_apart(store, source, dest, "sender_pays", shape=None)
    store.posting(source, AMOUNT, side="debit", posted=at(2))

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert not any(a.kind == "fee_unexplained" for a in open_alerts(store.factory).values())


def test_the_explanation_names_the_missing_fee_leg_with_its_figures(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, AMOUNT)
    receipt = uuid.uuid4()
    store.posting(source, AMOUNT, side="debit", receipt=receipt, posted=at(1))
    store.posting(dest, AMOUNT, side="credit", receipt=receipt, posted=at(1))
    store.notification("TRANSACTION_COMPLETED", source, AMOUNT, transfer=transfer, receipt=receipt)
    with_fee(store.factory, transfer, charged=FEE, bearer="sender_pays")

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    alert = open_alerts(store.factory)[
        fingerprint("amount_mismatch", "transfer", str(transfer.transfer_ref))
    ]
    assert "no fee debit on the source" in alert.subject
    assert "the sender pays the fee, 25.00 NGN" in alert.subject
    assert "0.00 NGN more" not in alert.subject and "0.00 NGN less" not in alert.subject


def test_a_fee_leg_read_before_its_transfers_fee_waits_and_joins_once_the_fee_is_read(
    store: Store,
) -> None:
    """The ledger is read before the status read that states the fee: the fee leg fits no
    transfer yet, waits in the backlog (no alert within the grace), and the pass after the
    fee is read joins it, reading only what waits."""
    source, dest = store.holding(locator=False), store.holding()
    transfer, principal, fee_legs = settle_apart(store, source, dest, "sender_pays", shape=None)
    with_fee(store.factory, transfer, charged=None, bearer="sender_pays")

    run_pass(store.factory, POLICY, now=at(60), publish=False)
    assert open_alerts(store.factory) == {}
    assert grouped(store.factory, transfer) == {p.id for p in principal}

    with_fee(store.factory, transfer, charged=FEE, bearer="sender_pays")
    run_pass(store.factory, POLICY, now=at(120), publish=False)

    assert open_alerts(store.factory) == {}
    assert grouped(store.factory, transfer) == {p.id for p in principal + fee_legs}
