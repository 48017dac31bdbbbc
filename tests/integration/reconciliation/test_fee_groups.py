"""A transfer that charged a fee: its legs are one group that adds up for who pays.

Each test builds the legs as a provider lays them out (fee legs in the transfer's journal or a
journal of their own, under the transfer's journalKind or one recon has never seen), runs a
pass, and looks at the alerts. Before fees were grouped, every fee leg was compared with the
transfer's amount and raised a false amount_mismatch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.store.models import Alert, Holding, Match, Posting, Transfer
from reconciliation.transfers.polling import Backoff, claim_due_transfers, record_status
from tests.integration.reconciliation.builders import Store, at
from upstream.wire.transfers import Fees, TransferStatus

POLICY = ReconcilePolicy(
    match_window_seconds=600,
    notification_grace_seconds=300,
    projection_grace_seconds=60,
    finality_deadline_seconds=3600,
    alert_cap_per_pass=50,
)
NOW = 3600.0
AMOUNT = 200_000
FEE = 2_500
#: journalKind names a provider may give fee legs: the principal's, and ones recon never saw.
KNOWN_KIND = "transfer_settlement"
FEE_KIND = "application_fee_assessment"
WITHHOLDING_KIND = "receiver_fee_withholding"


@dataclass
class Layout:
    own_journal: bool
    unknown_kinds: bool


LAYOUTS = [
    pytest.param(Layout(False, False), id="same-journal"),
    pytest.param(Layout(True, False), id="own-journal"),
    pytest.param(Layout(False, True), id="same-journal-unknown-kind"),
    pytest.param(Layout(True, True), id="own-journal-unknown-kind"),
]


def open_alerts(factory: sessionmaker[Session]) -> dict[str, Alert]:
    with factory() as s:
        return {
            a.fingerprint: a
            for a in s.scalars(select(Alert).where(Alert.state.in_(("open", "acknowledged"))))
        }


def with_fee(
    factory: sessionmaker[Session],
    transfer: Transfer,
    *,
    charged: int | None,
    bearer: str | None,
    quoted: int | None = None,
) -> None:
    with factory.begin() as s:
        s.execute(
            update(Transfer)
            .where(Transfer.id == transfer.id)
            .values(
                fee_charged_minor=charged,
                fee_bearer=bearer,
                fee_quoted_minor=quoted,
                fee_kind="application_fee",
            )
        )


def settle_with_fee(
    store: Store,
    source: Holding,
    dest: Holding,
    bearer: str,
    layout: Layout,
    *,
    amount: int = AMOUNT,
    fee: int = FEE,
    sender_share: int | None = None,
) -> tuple[Transfer, list[Posting]]:
    """A settled transfer, its legs laid out for `bearer`, and its TRANSACTION_COMPLETED."""
    transfer = store.transfer(source, dest, amount)
    receipt, journal = uuid.uuid4(), uuid.uuid4()
    fee_journal = uuid.uuid4() if layout.own_journal else journal
    fee_kind = FEE_KIND if layout.unknown_kinds else KNOWN_KIND
    withholding_kind = WITHHOLDING_KIND if layout.unknown_kinds else KNOWN_KIND

    def leg(
        holding: Holding, value: int, side: str, *, fee_leg: bool = False, kind: str = ""
    ) -> Posting:
        return store.posting(
            holding,
            value,
            side=side,
            receipt=receipt,
            journal=fee_journal if fee_leg else journal,
            kind=kind or (fee_kind if fee_leg else KNOWN_KIND),
            posted=at(1),
        )

    legs = [leg(source, amount, "debit")]
    if bearer == "sender_pays":
        legs += [leg(source, fee, "debit", fee_leg=True), leg(dest, amount, "credit")]
    elif bearer == "receiver_pays":
        legs += [leg(dest, amount - fee, "credit")]
    elif bearer == "application_pays":
        legs += [leg(dest, amount, "credit")]
    elif bearer == "split":
        share = (fee + 1) // 2 if sender_share is None else sender_share
        legs += [
            leg(source, share, "debit", fee_leg=True),
            leg(dest, fee - share, "debit", fee_leg=True, kind=withholding_kind),
            leg(dest, amount, "credit"),
        ]
    store.notification("TRANSACTION_COMPLETED", source, amount, transfer=transfer, receipt=receipt)
    with_fee(store.factory, transfer, charged=fee, bearer=bearer)
    return transfer, legs


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("bearer", ["sender_pays", "receiver_pays", "application_pays", "split"])
def test_a_fee_under_each_bearer_and_layout_raises_nothing(
    store: Store, bearer: str, layout: Layout
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer, legs = settle_with_fee(store, source, dest, bearer, layout)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert open_alerts(store.factory) == {}
    with store.factory() as s:
        grouped = set(
            s.scalars(
                select(Match.posting_id).where(
                    Match.transfer_id == transfer.id, Match.unmatched_at.is_(None)
                )
            )
        )
    assert grouped == {p.id for p in legs}, "every leg of the receipt is in the transfer's group"


def test_a_group_that_does_not_add_up_is_one_amount_mismatch_listing_every_leg(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer, _ = settle_with_fee(
        store, source, dest, "sender_pays", Layout(True, True), fee=FEE + 100
    )
    with_fee(store.factory, transfer, charged=FEE, bearer="sender_pays")

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    alerts = open_alerts(store.factory)
    key = fingerprint("amount_mismatch", "transfer", str(transfer.transfer_ref))
    assert set(alerts) == {key}
    evidence = alerts[key].evidence
    assert len(evidence["postings"]) == 3
    assert {leg["journalKind"] for leg in evidence["postings"]} == {KNOWN_KIND, FEE_KIND}
    assert evidence["group"]["senderShareMinor"] == FEE + 100
    assert evidence["group"]["feeMinor"] == FEE
    assert "does not add up" in alerts[key].subject


def test_a_split_whose_shares_do_not_sum_to_the_fee_is_a_mismatch(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer, legs = settle_with_fee(store, source, dest, "split", Layout(False, True))
    # The withholding leg took one minor unit too many from the receiver.
    with store.factory.begin() as s:
        s.execute(
            update(Posting)
            .where(Posting.id == legs[2].id)
            .values(amount_minor=Posting.amount_minor + 1)
        )

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert set(open_alerts(store.factory)) == {
        fingerprint("amount_mismatch", "transfer", str(transfer.transfer_ref))
    }


def test_a_transfer_without_a_fee_whose_credit_differs_still_mismatches(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, 10_000)
    receipt = uuid.uuid4()
    store.posting(source, 10_000, side="debit", receipt=receipt, posted=at(1))
    store.posting(dest, 9_000, side="credit", receipt=receipt, posted=at(1))
    store.notification("TRANSACTION_COMPLETED", source, 10_000, transfer=transfer, receipt=receipt)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert set(open_alerts(store.factory)) == {
        fingerprint("amount_mismatch", "transfer", str(transfer.transfer_ref))
    }


def test_a_quote_whose_fee_differs_from_the_charged_one_is_a_fee_mismatch_only(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer, _ = settle_with_fee(store, source, dest, "sender_pays", Layout(True, True), fee=3_000)
    with_fee(store.factory, transfer, charged=3_000, bearer="sender_pays", quoted=FEE)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    alerts = open_alerts(store.factory)
    key = fingerprint("fee_mismatch", str(transfer.transfer_ref))
    assert set(alerts) == {key}
    fee: dict[str, Any] = alerts[key].evidence["fee"]
    assert (fee["quotedMinor"], fee["chargedMinor"]) == (str(FEE), "3000")
    assert "30.00 NGN" in alerts[key].subject and "25.00 NGN" in alerts[key].subject

    # The provider corrects the fee to the quoted one: the alert clears by itself.
    with_fee(store.factory, transfer, charged=FEE, bearer="sender_pays", quoted=FEE)
    run_pass(store.factory, POLICY, now=at(NOW + 60), publish=False)
    assert key not in open_alerts(store.factory)


def test_a_quoted_transfer_that_failed_charged_nothing_and_is_no_fee_mismatch(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, AMOUNT, status="failed")
    with_fee(store.factory, transfer, charged=0, bearer="sender_pays", quoted=FEE)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert not any(a.kind == "fee_mismatch" for a in open_alerts(store.factory).values())


def test_an_unknown_fee_is_never_a_mismatch_by_its_size(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer, _ = settle_with_fee(store, source, dest, "sender_pays", Layout(True, True))
    with_fee(store.factory, transfer, charged=None, bearer="sender_pays")

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert open_alerts(store.factory) == {}


def test_legs_of_a_holding_not_read_yet_are_checked_when_they_arrive(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, AMOUNT)
    with_fee(store.factory, transfer, charged=FEE, bearer="sender_pays")
    receipt, journal = uuid.uuid4(), uuid.uuid4()
    for value in (AMOUNT, FEE):
        store.posting(source, value, side="debit", receipt=receipt, journal=journal, posted=at(1))
    store.notification("TRANSACTION_COMPLETED", source, AMOUNT, transfer=transfer, receipt=receipt)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)
    assert open_alerts(store.factory) == {}

    # The destination's credit arrives short: now the group does not add up.
    store.posting(dest, AMOUNT - 1, receipt=receipt, journal=journal, posted=at(2))
    run_pass(store.factory, POLICY, now=at(NOW + 60), publish=False)
    assert set(open_alerts(store.factory)) == {
        fingerprint("amount_mismatch", "transfer", str(transfer.transfer_ref))
    }


def test_a_fee_leg_of_a_transfer_recon_does_not_know_is_grouped_by_its_notification(
    store: Store,
) -> None:
    source, dest = store.holding(locator=False), store.holding()
    elsewhere = Transfer(transfer_ref=uuid.uuid4())
    receipt = uuid.uuid4()
    store.posting(source, AMOUNT, side="debit", receipt=receipt, posted=at(1))
    store.posting(source, FEE, side="debit", receipt=receipt, posted=at(1), kind=FEE_KIND)
    store.posting(dest, AMOUNT, side="credit", receipt=receipt, posted=at(1))
    store.notification("TRANSACTION_COMPLETED", source, AMOUNT, transfer=elsewhere, receipt=receipt)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)

    assert not any(a.kind == "amount_mismatch" for a in open_alerts(store.factory).values())


def test_legs_checked_while_the_fee_was_unknown_are_checked_again_once_it_is_read(
    store: Store,
) -> None:
    """The legs post (and are matched) before the status read that states the fee: the pass
    then has nothing to hold the sender's extra debit against. The read that states the fee
    must make the next pass add the group up again, though no new leg or match arrives."""
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, AMOUNT)
    with_fee(store.factory, transfer, charged=None, bearer="sender_pays")
    receipt, journal = uuid.uuid4(), uuid.uuid4()
    store.posting(source, AMOUNT, side="debit", receipt=receipt, journal=journal, posted=at(1))
    store.posting(source, 2 * FEE, side="debit", receipt=receipt, journal=journal, posted=at(1))
    store.posting(dest, AMOUNT, receipt=receipt, journal=journal, posted=at(1))
    store.notification("TRANSACTION_COMPLETED", source, AMOUNT, transfer=transfer, receipt=receipt)

    run_pass(store.factory, POLICY, now=at(NOW), publish=False)
    assert open_alerts(store.factory) == {}, "an unknown fee bounds no share"

    # The poller's next read states the fee, through the path a worker takes.
    with store.factory.begin() as s:
        s.execute(update(Transfer).where(Transfer.id == transfer.id).values(is_terminal=False))
    [claim] = claim_due_transfers(store.factory, "test", at(NOW), 10)
    total = {"kind": "application_fee", "bearer": "sender_pays", "amountMinorUnits": str(FEE)}
    total["valueUnit"] = {"kind": "fiat", "currency": str(transfer.currency)}
    read = TransferStatus(
        transfer_ref=transfer.transfer_ref,
        status="completed",
        reason=None,
        is_terminal=True,
        is_successful=True,
        revision=3,
        fees=Fees(status="charged", reason=None, totals=(total,), lines=()),
    )
    record_status(store.factory, claim, "test", read, at(NOW + 30), Backoff())

    run_pass(store.factory, POLICY, now=at(NOW + 60), publish=False)
    alerts = open_alerts(store.factory)
    key = fingerprint("amount_mismatch", "transfer", str(transfer.transfer_ref))
    assert set(alerts) == {key}
    assert alerts[key].evidence["group"]["feeMinor"] == FEE
    assert alerts[key].evidence["group"]["senderShareMinor"] == 2 * FEE

    # The next pass keeps it open: the rule re-reads the transfers its open alerts name.
    run_pass(store.factory, POLICY, now=at(NOW + 120), publish=False)
    assert set(open_alerts(store.factory)) == {key}
