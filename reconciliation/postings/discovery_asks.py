"""A notification naming a holding recon has not discovered asks for discovery at once.

Discovery runs on a tick (RECON_DISCOVER_HOLDINGS_SECONDS, five minutes by default): a new
account's first credit is announced within a second, but until the tick comes round recon has
no holding to read postings for, and the notification waits for a posting that nobody is
reading. So the inbox asks for discovery when a batch names a holding (by holdingRef or
endpointRef) the store does not have, at most once per `ASK_INTERVAL_SECONDS` across every
worker: a notification about a holding that never appears in the register (a payload naming
someone else's) costs one register listing per interval, not one per delivery.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.store import watermarks
from reconciliation.store.in_lists import chunks
from reconciliation.store.models import Holding, Watermark
from reconciliation.store.write_statements import rows_touched

#: Watermark: when discovery was last asked for (epoch milliseconds).
ASKED_AT: Final = "discovery.asked_at"
#: Seconds between two asks: a register listing is a handful of company API requests, and a
#: new account's notifications come in bursts (its first credit, then each posting).
ASK_INTERVAL_SECONDS: Final = 30.0


def unknown_holdings(
    session: Session, holding_refs: Collection[uuid.UUID], endpoint_refs: Collection[uuid.UUID]
) -> bool:
    """Whether any of the refs names no stored holding."""
    for refs, column in (
        (holding_refs, Holding.holding_ref),
        (endpoint_refs, Holding.endpoint_ref),
    ):
        wanted = set(refs)
        for batch in chunks(sorted(wanted)):
            wanted -= set(session.scalars(select(column).where(column.in_(batch))))
        if wanted:
            return True
    return False


def ask_for_discovery(
    factory: sessionmaker[Session],
    holding_refs: Collection[uuid.UUID],
    endpoint_refs: Collection[uuid.UUID],
    now: datetime,
) -> bool:
    """True when the caller should send discovery now: a ref names no stored holding and no
    worker asked within the interval (the ask is claimed with one conditional write)."""
    if not holding_refs and not endpoint_refs:
        return False
    with factory() as session:
        if not unknown_holdings(session, holding_refs, endpoint_refs):
            return False
        stamp = watermarks.to_millis(now)
        before = watermarks.to_millis(now - timedelta(seconds=ASK_INTERVAL_SECONDS))
        claimed = rows_touched(
            session.execute(
                update(Watermark)
                .where(Watermark.name == ASKED_AT, Watermark.value <= before)
                .values(value=stamp, updated_at=now)
            )
        )
        if not claimed:
            if session.get(Watermark, ASKED_AT) is not None:
                return False  # asked within the interval
            session.add(Watermark(name=ASKED_AT, value=stamp, updated_at=now))
        try:
            session.commit()
        except IntegrityError:
            return False  # another worker's first ask won
    return True
