"""The first ledger audit waits until every watched holding has been read to the end once.

An audit while a holding's first catch-up runs reads its whole ledger a second time, at once.
`claim_first_audit` is what the activity actor asks after a first read before it sends the
audit (tests/integration/workers/test_first_audit.py runs the whole path with the sandbox).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from reconciliation.ledger_audit import claim_first_audit, first_reads_done
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Holding

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def _holding(s: Session, *, watched: bool = True) -> Holding:
    holding = Holding(
        account_ref=uuid.uuid4(),
        endpoint_ref=uuid.uuid4(),
        holding_ref=uuid.uuid4(),
        currency="NGN",
        watched=watched,
    )
    s.add(holding)
    s.flush()
    return holding


def test_every_watched_holding_must_have_finished_a_read(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as s:
        read, reading, new = _holding(s), _holding(s), _holding(s)
        _holding(s, watched=False)  # not watched: never read, never waited for
        s.add(ActivityCursor(holding_id=read.id, reads_completed=1, last_polled_at=NOW))
        s.add(ActivityCursor(holding_id=reading.id, reads_completed=0))
    with session_factory() as s:
        assert not first_reads_done(s)  # `reading` is mid-way, `new` has no cursor yet

    with transaction(session_factory) as s:
        cursor = s.get(ActivityCursor, reading.id)
        assert cursor is not None
        cursor.reads_completed = 1
    with session_factory() as s:
        assert not first_reads_done(s)  # `new` still has not been read

    with transaction(session_factory) as s:
        s.add(ActivityCursor(holding_id=new.id, reads_completed=2, last_polled_at=NOW))
    with session_factory() as s:
        assert first_reads_done(s)


def test_the_first_audit_is_claimed_once_when_the_last_holding_is_read(
    session_factory: sessionmaker[Session],
) -> None:
    """Several holdings' first reads can end in the same instant: one of them sends it."""
    with transaction(session_factory) as s:
        first, last = _holding(s), _holding(s)
        s.add(ActivityCursor(holding_id=first.id, reads_completed=1, last_polled_at=NOW))
        s.add(ActivityCursor(holding_id=last.id, reads_completed=0))
    assert not claim_first_audit(session_factory, 86_400, NOW)
    with transaction(session_factory) as s:
        cursor = s.get(ActivityCursor, last.id)
        assert cursor is not None
        cursor.reads_completed = 1
    claims = [claim_first_audit(session_factory, 86_400, NOW) for _ in range(3)]
    assert claims == [True, False, False]
