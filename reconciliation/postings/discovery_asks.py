"""A notification naming a holding recon has not discovered asks for discovery at once.

Discovery runs on a tick (RECON_DISCOVER_HOLDINGS_SECONDS, five minutes by default): a new
account's first credit is announced within a second, but until the tick comes round recon has
no holding to read postings for, and the notification waits for a posting that nobody is
reading. So the inbox asks for discovery when a batch names a holding (by holdingRef or
endpointRef) the store does not have, at most once per `ASK_INTERVAL_SECONDS` across every
worker: a notification about a holding that never appears in the register (a payload naming
someone else's) costs one register listing per interval, not one per delivery.

An ask inside the interval is deferred to the interval's end, never dropped (invariant: no
signal is lost, only coalesced or deferred): dropping it left an account opened 10 s after
another unknown until the discovery tick five minutes later. The watermark holds the time of
the latest ask, sent or deferred; a deferred one is in the future, and an ask made while a
deferred one is pending is coalesced into it (the deferred listing starts after the ask, so it
sees the holding the ask was about).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
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
    interval_seconds: float = ASK_INTERVAL_SECONDS,
) -> float | None:
    """Seconds from now after which the caller should send discovery (0: at once), or None.

    None when every ref names a stored holding, or when an ask already pending (deferred to a
    moment still to come) will list the register after this one. Otherwise the ask is claimed
    with one conditional write on the watermark: at once when no worker asked within the
    interval, else deferred to the interval's end.
    """
    if not holding_refs and not endpoint_refs:
        return None
    with factory() as session:
        if not unknown_holdings(session, holding_refs, endpoint_refs):
            return None
        stamp = watermarks.to_millis(now)
        interval_ms = round(interval_seconds * 1000)
        last = session.get(Watermark, ASKED_AT)
        if last is None:
            session.add(Watermark(name=ASKED_AT, value=stamp, updated_at=now))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                last = session.get(Watermark, ASKED_AT)  # another worker's first ask won
                if last is None:
                    return None
            else:
                return 0.0
        previous = last.value
        if previous > stamp:
            return None  # a deferred ask still to come covers this one
        at = max(stamp, previous + interval_ms)
        claimed = rows_touched(
            session.execute(
                update(Watermark)
                .where(Watermark.name == ASKED_AT, Watermark.value == previous)
                .values(value=at, updated_at=now)
            )
        )
        session.commit()
    if not claimed:
        return None  # another worker claimed this ask (sent or deferred) at the same moment
    return (at - stamp) / 1000.0
