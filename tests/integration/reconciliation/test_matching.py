"""Matching rules on SQLite and PostgreSQL, with rows built in the store."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.store.models import Match, MatchBacklog, Notification, Posting, Transfer
from tests.integration.reconciliation.builders import Store, at

POLICY = ReconcilePolicy(match_window_seconds=600, notification_grace_seconds=300)


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


def reconcile(store: Store, seconds: float = 60, **kwargs: Any) -> Any:
    return run_pass(store.factory, POLICY, now=at(seconds), publish=False, **kwargs)


def rows(store: Store) -> list[tuple[Any, ...]]:
    with store.factory() as s:
        return [
            tuple(r)
            for r in s.execute(
                select(Match.rule, Match.posting_id, Match.transfer_id, Match.notification_id)
                .where(Match.unmatched_at.is_(None))
                .order_by(Match.id)
            )
        ]


def status(store: Store, model: Any, item_id: int) -> str:
    """'matched' (an active row names it), 'exception', 'waiting' (backlog) or 'unseen'."""
    kind = {Posting: "posting", Transfer: "transfer", Notification: "notification"}[model]
    with store.factory() as s:
        item = s.get_one(model, item_id)
        if item.match_status == "exception":
            return "exception"
        column = getattr(Match, f"{kind}_id")
        if s.scalars(
            select(Match.id).where(column == item_id, Match.unmatched_at.is_(None))
        ).first():
            return "matched"
        queued = s.get(MatchBacklog, (kind, item_id))
        return "waiting" if queued is not None else "unseen"


def test_settled_transfer_matches_both_legs_to_its_one_notification(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, 150_050)
    debit, credit, receipt = store.settle(transfer, source, dest)
    note = store.notification(
        "TRANSACTION_COMPLETED", source, 150_050, transfer=transfer, receipt=receipt
    )

    result = reconcile(store)

    assert sorted(rows(store)) == sorted(
        [
            ("transfer_ref", debit.id, transfer.id, note.id),
            ("transfer_ref", credit.id, transfer.id, note.id),
        ]
    )
    assert result.matched.rows_by_rule == {"transfer_ref": 2}
    assert status(store, Posting, debit.id) == status(store, Posting, credit.id) == "matched"
    assert status(store, Transfer, transfer.id) == "matched"
    assert status(store, Notification, note.id) == "matched"


def test_each_leg_takes_the_notification_about_its_own_holding(store: Store) -> None:
    """Two notifications share a receipt (the provider told both sides): no ambiguity, each
    leg is matched to the one about its own holding, the better rank."""
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, 42_000)
    debit, credit, receipt = store.settle(transfer, source, dest)
    sent = store.notification(
        "TRANSACTION_COMPLETED", source, 42_000, transfer=transfer, receipt=receipt
    )
    received = store.notification("PAYMENT_RECEIVED", dest, 42_000, receipt=receipt)

    result = reconcile(store)

    assert sorted(rows(store)) == sorted(
        [
            ("transfer_ref", debit.id, transfer.id, sent.id),
            ("receipt_ref", credit.id, None, received.id),
        ]
    )
    assert result.matched.ambiguities == []


def test_inbound_credit_matches_by_receipt(store: Store) -> None:
    holding = store.holding()
    posting = store.posting(holding, 5_000)
    note = store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)

    reconcile(store)

    assert rows(store) == [("receipt_ref", posting.id, None, note.id)]


def test_account_number_amount_and_window(store: Store) -> None:
    holding = store.holding()
    inside = store.posting(holding, 7_000, posted=at(0))
    store.posting(holding, 7_000, posted=at(-5_000))  # outside the 600 s window
    store.posting(holding, 7_001, posted=at(10))  # another amount
    note = store.notification("PAYMENT_RECEIVED", holding, 7_000, occurred=at(120))

    result = reconcile(store)

    assert rows(store) == [("account_amount_window", inside.id, None, note.id)]
    assert result.matched.ambiguities == []


def test_two_notifications_for_one_posting_is_an_exception_not_a_guess(store: Store) -> None:
    holding = store.holding()
    posting = store.posting(holding, 5_000)
    first = store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)
    second = store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)

    result = reconcile(store)

    assert rows(store) == []
    assert status(store, Posting, posting.id) == "exception"
    assert status(store, Notification, first.id) == "exception"
    assert status(store, Notification, second.id) == "exception"
    [ambiguity] = result.matched.ambiguities
    assert ambiguity.anchor == ("posting", posting.id)
    assert set(ambiguity.rivals) == {("notification", first.id), ("notification", second.id)}


def test_two_postings_for_one_notification_by_account_is_an_exception(store: Store) -> None:
    holding = store.holding()
    a = store.posting(holding, 9_900, posted=at(-30))
    b = store.posting(holding, 9_900, posted=at(30))
    note = store.notification("PAYMENT_RECEIVED", holding, 9_900, occurred=at(0))

    result = reconcile(store)

    assert rows(store) == []
    assert status(store, Notification, note.id) == "exception"
    [ambiguity] = result.matched.ambiguities
    assert ambiguity.anchor == ("notification", note.id)
    assert set(ambiguity.rivals) == {("posting", a.id), ("posting", b.id)}


def test_failed_and_denied_transfers(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    failed = store.transfer(source, dest, 100, status="failed")
    denied = store.transfer(source, dest, 10**12, status="reservation_denied")
    waiting = store.transfer(source, dest, 300, status="awaiting_finality")
    note = store.notification("TRANSACTION_FAILED", source, 100, transfer=failed)

    reconcile(store)

    assert sorted(rows(store), key=str) == sorted(
        [("transfer_ref", None, failed.id, note.id)],
        key=str,
    )
    assert status(store, Transfer, waiting.id) == "waiting"
    assert status(store, Transfer, denied.id) == "unseen"  # nothing to wait for


def test_a_transfer_learned_of_late_is_attached_to_its_legs(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    template = store.transfer(source, dest, 400)
    debit, credit, receipt = store.settle(template, source, dest)
    with store.factory.begin() as s:  # the transfer is not in our store yet
        s.delete(s.get(Transfer, template.id))
    note = store.notification("TRANSACTION_COMPLETED", source, 400, receipt=receipt)
    with store.factory.begin() as s:
        s.get(Notification, note.id).transfer_ref = template.transfer_ref  # type: ignore[union-attr]

    reconcile(store)
    assert {r[0] for r in rows(store)} == {"receipt_ref"}

    late = store.transfer(source, dest, 400)
    with store.factory.begin() as s:
        s.get(Transfer, late.id).transfer_ref = template.transfer_ref  # type: ignore[union-attr]
    result = reconcile(store, 120)

    assert sorted(rows(store)) == sorted(
        [
            ("transfer_ref", debit.id, late.id, note.id),
            ("transfer_ref", credit.id, late.id, note.id),
        ]
    )
    assert result.matched.attached == 1  # one notification, its two rows
    assert status(store, Transfer, late.id) == "matched"


def test_a_posting_that_arrives_after_its_notification_matches_on_a_later_pass(
    store: Store,
) -> None:
    holding = store.holding()
    note_receipt = __import__("uuid").uuid4()
    note = store.notification("PAYMENT_RECEIVED", holding, 2_500, receipt=note_receipt)
    reconcile(store)
    assert status(store, Notification, note.id) == "waiting"

    posting = store.posting(holding, 2_500, receipt=note_receipt)
    result = reconcile(store, 90)

    assert rows(store) == [("receipt_ref", posting.id, None, note.id)]
    assert result.matched.rows == 1


def test_a_second_pass_changes_nothing(store: Store) -> None:
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, 800)
    _, _, receipt = store.settle(transfer, source, dest)
    store.notification("TRANSACTION_COMPLETED", source, 800, transfer=transfer, receipt=receipt)
    store.posting(dest, 50)  # never notified: stays unmatched
    reconcile(store)
    before = dump(store)

    again = reconcile(store, 61)

    assert again.matched.rows == 0
    assert dump(store) == before


def test_dry_run_shows_the_matches_and_writes_nothing(store: Store) -> None:
    holding = store.holding()
    posting = store.posting(holding, 5_000)
    store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)
    before = dump(store)

    result = reconcile(store, dry_run=True)

    assert result.matched.rows_by_rule == {"receipt_ref": 1}
    assert [r["rule"] for r in result.sample] == ["receipt_ref"]
    assert dump(store) == before


def dump(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables a pass may write, for before/after comparisons."""
    from reconciliation.store.models import Base

    out: dict[str, list[tuple[Any, ...]]] = {}
    with store.factory() as s:
        for name in (
            "matches",
            "postings",
            "transfers",
            "notifications",
            "alerts",
            "balance_checks",
        ):
            table = Base.metadata.tables[name]
            out[name] = [tuple(r) for r in s.execute(select(table).order_by(*table.primary_key))]
    return out
