"""The activity cursor and its lease in the store, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.postings.activity import (
    LeaseLostError,
    acquire_lease,
    release_lease,
    store_page,
    stored_postings_count,
)
from reconciliation.postings.due_reads import claim_due_holdings
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Holding, Posting
from upstream.activity import ActivityCursor as WireCursor
from upstream.wire.balances import Posting as WirePosting
from upstream.wire.common import ValueUnit

NOW = datetime(2026, 11, 22, 1, 0, tzinfo=UTC)


def make_holding(factory: sessionmaker[Session]) -> int:
    with transaction(factory) as session:
        holding = Holding(
            account_ref=uuid.uuid4(),
            endpoint_ref=uuid.uuid4(),
            holding_ref=uuid.uuid4(),
            currency="NGN",
        )
        session.add(holding)
        session.flush()
        return holding.id


def postings(n: int, start_ms: int = 0) -> list[WirePosting]:
    return [
        WirePosting(
            posted_at=NOW + timedelta(milliseconds=start_ms + i),
            receipt_ref=uuid.uuid4(),
            journal_ref=uuid.uuid4(),
            line_ref=uuid.uuid4(),
            journal_kind="transfer_settlement",
            posting_side="credit",
            balance_effect="increase",
            amount_minor_units=100 + i,
            value_unit=ValueUnit.fiat("NGN"),
            ledger_partition="customer_liability",
            ledger_normal_side="credit_normal",
        )
        for i in range(n)
    ]


def cursor_after(entry: WirePosting, posted_at_text: str) -> WireCursor:
    return WireCursor(
        after_posted_at=posted_at_text,
        after_receipt_ref=str(entry.receipt_ref).upper(),
        after_line_ref=str(entry.line_ref),
        sort_direction="oldest_first",
    )


def test_only_one_worker_holds_a_holding_until_the_lease_expires(
    session_factory: sessionmaker[Session],
) -> None:
    holding = make_holding(session_factory)
    first = acquire_lease(session_factory, holding, "worker-a", NOW, seconds=30)
    assert first is not None
    assert first.cursor is None
    assert acquire_lease(session_factory, holding, "worker-b", NOW + timedelta(seconds=29)) is None
    second = acquire_lease(session_factory, holding, "worker-b", NOW + timedelta(seconds=31))
    assert second is not None and second.owner == "worker-b"


def test_a_worker_that_lost_its_lease_writes_nothing(
    session_factory: sessionmaker[Session],
) -> None:
    holding = make_holding(session_factory)
    stale = acquire_lease(session_factory, holding, "worker-a", NOW, seconds=5)
    assert stale is not None
    fresh = acquire_lease(session_factory, holding, "worker-b", NOW + timedelta(seconds=6))
    assert fresh is not None
    page = postings(3)
    connection = session_factory()
    with pytest.raises(LeaseLostError):
        store_page(connection, stale, page, cursor_after(page[-1], "x"), NOW)
    with transaction(session_factory) as session:
        assert stored_postings_count(session, holding) == 0
        row = session.get(ActivityCursor, holding)
        assert row is not None
        assert row.after_posted_at is None
        assert row.lease_owner == "worker-b"
    # The rolled-back page was that connection's first (on PostgreSQL its CREATE of the stage
    # table went with it): its next page is stored all the same.
    store_page(connection, fresh, page, cursor_after(page[-1], "x"), NOW)
    with transaction(session_factory) as session:
        assert stored_postings_count(session, holding) == 3


def test_a_page_for_a_holding_the_store_does_not_hold_is_refused_and_nothing_is_stored(
    session_factory: sessionmaker[Session],
) -> None:
    """Postings carry no foreign key to their holding (migration 0009): the page write's own
    lease check is what keeps a posting from naming a holding that is not there. A lease for
    a holding id the store does not hold (forged from a real one) finds no cursor row to
    move, so the page is rolled back whole, as for a lost lease."""
    holding = make_holding(session_factory)
    lease = acquire_lease(session_factory, holding, "worker-a", NOW)
    assert lease is not None
    unknown = replace(lease, holding_id=holding + 1000)
    page = postings(3)
    session = session_factory()
    with pytest.raises(LeaseLostError):
        store_page(session, unknown, page, cursor_after(page[-1], "x"), NOW)
    # The same session goes on to store the true holding's page (nothing half-done is left).
    store_page(session, lease, page, cursor_after(page[-1], "x"), NOW)
    with transaction(session_factory) as check:
        assert stored_postings_count(check) == 3
        orphans = check.scalar(
            select(func.count())
            .select_from(Posting)
            .outerjoin(Holding, Holding.id == Posting.holding_id)
            .where(Holding.id.is_(None))
        )
        assert orphans == 0


def test_a_page_and_its_cursor_are_stored_together_exactly_as_issued(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 3: a page's postings and the cursor after it are committed together, the cursor as
    issued."""
    holding = make_holding(session_factory)
    lease = acquire_lease(session_factory, holding, "worker-a", NOW)
    assert lease is not None
    page = postings(4)
    # An odd but legal text form: kept byte for byte, never re-formatted.
    issued = cursor_after(page[-1], "2026-11-22T01:00:00.120Z")
    store_page(session_factory(), lease, page, issued, NOW)
    store_page(session_factory(), lease, page, issued, NOW)  # the same page again: no duplicate
    release_lease(session_factory, lease, NOW + timedelta(minutes=1), caught_up_at=NOW)
    again = acquire_lease(session_factory, holding, "worker-b", NOW + timedelta(seconds=1))
    assert again is not None
    assert again.cursor == issued
    with transaction(session_factory) as session:
        stored = session.execute(
            select(Posting.line_ref, Posting.amount_minor, Posting.posted_at, Posting.side)
            .where(Posting.holding_id == holding)
            .order_by(Posting.amount_minor)
        ).all()
        cursor_row = session.get(ActivityCursor, holding)
        assert cursor_row is not None
        assert cursor_row.postings_read == 8  # both reads counted, one stored
        assert cursor_row.reads_completed == 1
    assert [(r.line_ref, r.amount_minor, r.posted_at, r.side) for r in stored] == [
        (p.line_ref, p.amount_minor_units, p.posted_at, "credit") for p in page
    ]


def test_a_poll_request_already_answered_by_a_completed_read_is_skipped(
    session_factory: sessionmaker[Session],
) -> None:
    holding = make_holding(session_factory)
    lease = acquire_lease(session_factory, holding, "worker-a", NOW, after_reads=0)
    assert lease is not None
    release_lease(session_factory, lease, NOW, caught_up_at=NOW)
    # A duplicate of the message that was just served (sent when 0 reads were complete).
    assert acquire_lease(session_factory, holding, "worker-b", NOW, after_reads=0) is None
    assert acquire_lease(session_factory, holding, "worker-b", NOW, after_reads=1) is not None


def test_due_holdings_are_sent_once_until_the_redo_time(
    session_factory: sessionmaker[Session],
) -> None:
    holdings = sorted(make_holding(session_factory) for _ in range(3))
    with transaction(session_factory) as session:
        for h in holdings:
            session.add(ActivityCursor(holding_id=h, next_poll_at=NOW, reads_completed=2))
    redo = timedelta(seconds=30)
    with transaction(session_factory) as session:
        first = claim_due_holdings(session, NOW, redo)
    with transaction(session_factory) as session:
        again = claim_due_holdings(session, NOW + timedelta(seconds=29), redo)
    with transaction(session_factory) as session:
        later = claim_due_holdings(session, NOW + timedelta(seconds=31), redo)
    assert sorted(d.holding_id for d in first) == holdings
    assert {d.reads_completed for d in first} == {2}
    assert again == []
    assert sorted(d.holding_id for d in later) == holdings


def test_an_incomplete_stored_cursor_is_refused_not_guessed(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 3: a stored cursor missing a part is refused, never completed from the postings."""
    holding = make_holding(session_factory)
    with transaction(session_factory) as session:
        session.add(ActivityCursor(holding_id=holding, after_posted_at="2026-11-22T01:00:00.000Z"))
    with pytest.raises(ValueError, match="incomplete"):
        acquire_lease(session_factory, holding, "worker-a", NOW)


def test_a_stored_page_clears_the_error_and_a_release_keeps_what_it_is_not_told(
    session_factory: sessionmaker[Session],
) -> None:
    holding = make_holding(session_factory)
    lease = acquire_lease(session_factory, holding, "worker-a", NOW)
    assert lease is not None
    release_lease(session_factory, lease, NOW + timedelta(seconds=5), error="Unavailable: 503")
    lease = acquire_lease(session_factory, holding, "worker-a", NOW + timedelta(seconds=5))
    assert lease is not None
    page = postings(2)
    store_page(session_factory(), lease, page, cursor_after(page[-1], "t"), NOW)
    with transaction(session_factory) as session:
        row = session.get(ActivityCursor, holding)
        assert row is not None
        assert (row.consecutive_errors, row.last_error) == (0, None)
        assert row.last_advanced_at is not None and row.postings_read == 2
    # A release with no due time, no completion and no error changes only the lease.
    release_lease(session_factory, lease, None)
    with transaction(session_factory) as session:
        after = session.get(ActivityCursor, holding)
        assert after is not None
        assert after.lease_owner is None and after.lease_expires_at is None
        assert after.next_poll_at == row.next_poll_at
        assert (after.reads_completed, after.consecutive_errors) == (0, 0)
        assert after.last_polled_at is None and after.last_error is None
