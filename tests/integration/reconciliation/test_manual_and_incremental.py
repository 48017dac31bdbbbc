"""Manual match and unmatch with who and why; incremental passes that read only what is new
or waiting (the backlog), never the history."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.matching.backlog import watermark_name
from reconciliation.matching.manual import (
    ManualMatchError,
    accept_alone,
    manual_match,
    manual_unmatch,
)
from reconciliation.store import watermarks
from reconciliation.store.models import Match, MatchBacklog, Notification, Posting
from tests.integration.reconciliation.builders import Store, at

POLICY = ReconcilePolicy(match_window_seconds=600, notification_grace_seconds=300)


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


def reconcile(store: Store, seconds: float = 60) -> Any:
    return run_pass(store.factory, POLICY, now=at(seconds), publish=False)


def backlog(store: Store) -> set[tuple[str, int]]:
    with store.factory() as s:
        return {(b.kind, b.item_id) for b in s.scalars(select(MatchBacklog))}


def test_manual_match_needs_who_why_and_a_seen_item(store: Store) -> None:
    holding = store.holding()
    posting = store.posting(holding, 100)
    with (
        store.factory() as s,
        pytest.raises(ManualMatchError, match="not been through a reconciliation pass"),
    ):
        accept_alone(s, "posting", posting.id, by="ana", reason="refund")
    reconcile(store)
    with store.factory() as s:
        with pytest.raises(ManualMatchError, match="say who you are"):
            accept_alone(s, "posting", posting.id, by=" ", reason="refund")
        with pytest.raises(ManualMatchError, match="say why"):
            accept_alone(s, "posting", posting.id, by="ana", reason="")
        with pytest.raises(ManualMatchError, match="no posting has id 999"):
            accept_alone(s, "posting", 999, by="ana", reason="x")
        with pytest.raises(ManualMatchError, match="name at least two items"):
            manual_match(s, by="ana", reason="x")
        # One item alone is not a match: it is the other decision, said by its own name.
        with pytest.raises(ManualMatchError, match="accept it without a counterpart"):
            manual_match(s, posting_ids=[posting.id], by="ana", reason="x")


def test_an_exception_decided_by_hand_then_taken_apart(store: Store) -> None:
    holding = store.holding()
    posting = store.posting(holding, 5_000)
    first = store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)
    second = store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)
    reconcile(store)  # two candidates: an exception, no guess

    with store.factory.begin() as s:
        [row] = manual_match(
            s,
            posting_ids=[posting.id],
            notification_id=first.id,
            by="ana@example.com",
            reason="the second event is the provider's duplicate",
        )
        dismissed = accept_alone(
            s, "notification", second.id, by="ana@example.com", reason="duplicate of the first"
        )
    with store.factory() as s:
        stored = s.get_one(Match, row.id)
        assert (stored.rule, stored.matched_by, stored.reason) == (
            "manual",
            "ana@example.com",
            "the second event is the provider's duplicate",
        )
        assert s.get_one(Posting, posting.id).match_status == "unmatched"  # out of a person's hands
    result = reconcile(store, 90)
    assert result.alerts.resolved and result.alerts.resolved[0].kind == "ambiguous_match"

    with store.factory.begin() as s:
        manual_unmatch(s, row.id, by="bo", reason="wrong customer after all")
        with pytest.raises(
            ManualMatchError,
            match=r"already unmatched by bo at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$",
        ):
            manual_unmatch(s, row.id, by="bo", reason="again")
    with store.factory() as s:
        undone = s.get_one(Match, row.id)
        assert (undone.unmatched_by, undone.unmatch_reason) == ("bo", "wrong customer after all")
        assert undone.unmatched_at is not None
        assert s.get_one(Posting, posting.id).match_status == "exception"
        assert s.get_one(Notification, first.id).match_status == "exception"
        assert s.get_one(Match, dismissed.id).unmatched_at is None  # the other decision stands
    again = reconcile(store, 120)
    assert again.matched.rows == 0  # automatic matching leaves a person's decision alone
    # ... and the items it left unexplained are not silent: one alert each until decided.
    assert sorted(c.fingerprint.split(":")[1] for c in again.alerts.opened) == [
        "notification",
        "posting",
    ]
    assert {c.kind for c in again.alerts.opened} == {"unmatched_by_hand"}
    with store.factory.begin() as s:
        manual_match(
            s, posting_ids=[posting.id], notification_id=first.id, by="bo", reason="it was right"
        )
    settled = reconcile(store, 150)
    resolved = sorted(c.fingerprint.split(":")[1] for c in settled.alerts.resolved)
    assert resolved == ["notification", "posting"]


def test_an_incremental_pass_reads_new_ids_and_the_backlog_only(store: Store) -> None:
    holding = store.holding()
    matched = store.posting(holding, 1_000)
    store.notification("PAYMENT_RECEIVED", holding, 1_000, receipt=matched.receipt_ref)
    waiting = store.posting(holding, 2_000, posted=at(0))
    reconcile(store)
    assert backlog(store) == {("posting", waiting.id)}
    with store.factory() as s:
        assert watermarks.read(s, watermark_name("posting")) == waiting.id

    # The notification of the waiting posting arrives without a receipt: rule 3 finds the
    # posting in the backlog; nothing else is looked at again.
    late = store.notification("PAYMENT_RECEIVED", holding, 2_000, occurred=at(30))
    result = reconcile(store, 90)
    assert result.matched.rows_by_rule == {"account_amount_window": 1}
    assert backlog(store) == set()
    with store.factory() as s:
        assert watermarks.read(s, watermark_name("notification")) == late.id
        rows = s.scalars(select(Match).order_by(Match.id)).all()
    assert [(r.rule, r.posting_id, r.notification_id) for r in rows][-1] == (
        "account_amount_window",
        waiting.id,
        late.id,
    )

    nothing = reconcile(store, 120)
    assert nothing.matched.rows == 0


def test_a_notification_waits_in_the_backlog_for_its_posting(store: Store) -> None:
    holding = store.holding()
    receipt = uuid.uuid4()
    note = store.notification("PAYMENT_RECEIVED", holding, 700, receipt=receipt)
    reconcile(store)
    assert backlog(store) == {("notification", note.id)}
    posting = store.posting(holding, 700, receipt=receipt)
    reconcile(store, 90)
    assert backlog(store) == set()
    with store.factory() as s:
        [row] = s.scalars(select(Match)).all()
    assert (row.posting_id, row.notification_id) == (posting.id, note.id)
