"""The balance rule reads a holding's snapshot and its postings in one snapshot of the store."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.drift.balance_sums import consistent_read
from reconciliation.store.models import Posting
from tests.integration.reconciliation.builders import Store


def test_a_posting_committed_during_the_balance_read_is_not_seen_by_it(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 9: every statement of the balance rule's read sees the store as it stood when
    the read began; a posting another writer commits meanwhile waits for the next pass, so a
    snapshot is never compared with half of a page's postings."""
    store = Store(session_factory)
    holding = store.holding()
    store.posting(holding, 500)
    posted = select(func.coalesce(func.sum(Posting.amount_minor), 0)).where(
        Posting.holding_id == holding.id
    )
    with consistent_read(session_factory) as read:
        before = read.scalar(posted)
        store.posting(holding, 700)  # another session, committed
        during = read.scalar(posted)
    with session_factory() as session:
        after = session.scalar(posted)
    assert (before, during, after) == (500, 500, 1200)
