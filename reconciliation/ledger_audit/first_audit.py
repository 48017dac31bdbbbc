"""When the first ledger audit of a store is sent: once every watched holding has been read.

Discovery stores new holdings and their pollers start reading at once. An audit sent then
reads every page of every ledger a second time, at the same moment (twice the gateway requests
of a first catch-up, sharing the rate limit with it), and can only say what the catch-up is
about to store. So the first audit is sent by the first read that completes the set
(`workers.actors.activity`), exactly once: several holdings' first reads can finish in the
same instant, and each would otherwise send it (two audits running at once, each reading
everything). A holding whose reads keep failing holds it back only until the scheduled tick,
which audits whatever the store has.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.ledger_audit.run import due
from reconciliation.store.models import ActivityCursor, Holding, Watermark

#: Watermark written by whoever sends the first audit: its key is the claim (one row, ever).
FIRST_AUDIT_SENT: Final = "ledger_audit.first_sent"


def first_reads_done(session: Session) -> bool:
    """Whether every watched holding's postings have been read to the end at least once."""
    never_read = (
        select(Holding.id)
        .outerjoin(ActivityCursor, ActivityCursor.holding_id == Holding.id)
        .where(
            Holding.watched.is_(True),
            or_(ActivityCursor.holding_id.is_(None), ActivityCursor.reads_completed == 0),
        )
        .limit(1)
    )
    return session.scalar(never_read) is None


def claim_first_audit(
    factory: sessionmaker[Session], interval_seconds: float, now: datetime
) -> bool:
    """True for exactly one caller once every watched holding is read and an audit is due:
    that caller sends the first audit. False before, after, and for every other caller."""
    with factory() as session:
        if not (first_reads_done(session) and due(session, interval_seconds, now)):
            return False
        session.add(Watermark(name=FIRST_AUDIT_SENT, value=1, updated_at=now))
        try:
            session.commit()
        except IntegrityError:
            return False  # another first read claimed it a moment before
    return True
