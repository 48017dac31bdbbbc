"""Compare the store's postings with the sandbox's ledger: same set, nothing twice."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store.models import Holding, Posting
from sandbox.state import SandboxState

PostingKey = tuple[uuid.UUID, uuid.UUID, uuid.UUID, int, str, datetime]


def sandbox_ledger(
    state: SandboxState, holding_refs: list[str] | None = None
) -> dict[str, list[PostingKey]]:
    """Every posting of each sandbox holding, oldest first."""
    refs = holding_refs if holding_refs is not None else sorted(state.holdings)
    return {ref: [_key(p) for p in state.postings(ref)] for ref in refs}


def ledger_heard(
    factory: sessionmaker[Session], state: SandboxState, holding_refs: list[str]
) -> bool:
    """The store knows at least these holdings, and every holding it knows has exactly the
    sandbox's postings (a holding a notification named may have been discovered besides)."""
    stored = stored_ledger(factory)
    if not set(holding_refs) <= set(stored):
        return False
    return stored == sandbox_ledger(state, sorted(stored))


def stored_ledger(factory: sessionmaker[Session]) -> dict[str, list[PostingKey]]:
    """Every stored posting per holding ref, in the gateway's order."""
    ledger: dict[str, list[PostingKey]] = {}
    with factory() as session:
        for holding_ref in session.scalars(select(Holding.holding_ref)):
            ledger[str(holding_ref)] = []
        rows = session.execute(
            select(
                Holding.holding_ref,
                Posting.journal_ref,
                Posting.line_ref,
                Posting.receipt_ref,
                Posting.amount_minor,
                Posting.side,
                Posting.posted_at,
            )
            .join(Holding, Holding.id == Posting.holding_id)
            .order_by(Posting.posted_at, Posting.receipt_ref, Posting.line_ref)
        )
        for ref, journal, line, receipt, amount, side, posted in rows:
            ledger[str(ref)].append((journal, line, receipt, amount, side, posted))
    return ledger


def stored_count(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(Posting)) or 0)


def assert_store_matches(state: SandboxState, factory: sessionmaker[Session]) -> int:
    """Every sandbox posting stored exactly once, nothing else; returns how many."""
    expected = sandbox_ledger(state)
    stored = stored_ledger(factory)
    for ref, want in expected.items():
        got = stored.get(ref, [])
        assert sorted(got) == sorted(want), f"holding {ref}: {len(got)} stored, {len(want)} posted"
    extra = set(stored) - set(expected)
    assert not any(stored[r] for r in extra), f"postings of unknown holdings: {extra}"
    # No foreign key says so (migration 0009): the page write's lease check must have.
    assert orphan_count(factory) == 0, "postings whose holding the store does not hold"
    total = sum(len(v) for v in expected.values())
    assert stored_count(factory) == total
    return total


def orphan_count(factory: sessionmaker[Session]) -> int:
    """Postings whose holding row is missing."""
    with factory() as session:
        query = (
            select(func.count())
            .select_from(Posting)
            .outerjoin(Holding, Holding.id == Posting.holding_id)
            .where(Holding.id.is_(None))
        )
        return int(session.scalar(query) or 0)


def _key(p: dict[str, Any]) -> PostingKey:
    return (
        uuid.UUID(p["journalRef"]),
        uuid.UUID(p["lineRef"]),
        uuid.UUID(p["receiptRef"]),
        int(p["amountMinorUnits"]),
        p["postingSide"],
        datetime.fromisoformat(p["postedAt"].replace("Z", "+00:00")),
    )
