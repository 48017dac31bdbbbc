"""Which reconciled items may leave: each kind's own conditions, read for a batch at once.

An item may go when it is past its kind's age, nothing waits on it (protection.still_waiting:
backlog, exception, not seen by a pass yet), no open or acknowledged alert names it, and:

- a posting: the balance-drift check no longer reads it. drift.balance_sums builds each
  holding's posted sum on its latest balance check: the check's sum, plus postings after the
  check's time, plus late postings with an id above the check's `postings_through_id`; and
  the projection's grace reads the postings just before the newest snapshot. So a posting may
  go only when its holding has been checked, its id is at or below that check's
  `postings_through_id`, and it was posted more than the projection grace before the check's
  snapshot. A holding never checked sums everything up to its snapshot: nothing of it goes.
  No alert about its holding as a whole may be open either (protection.OpenAlertRefs).
- a transfer: it is terminal (the poller is done with it) and settled before the cutoff, and
  its intents' Idempotency-Keys are closed and gone (outbound.py): the intents then go with
  it, so no key still honoured loses the record of what it created.
- a notification: its delivery is already gone (deliveries.py removes it once the
  notification waits on nothing), so deduplication keeps the inbox row exactly as long as
  RECON_RETAIN_DELIVERIES_DAYS says (invariant 2) and no delivery is left to derive it again.

A dry run removes nothing, so the deliveries and key records it would have removed earlier in
the run are still there when the facts are judged: it asks their own rules
(deliveries.processed_before, outbound.closed_before) instead, and counts what a run would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import Select, false, select
from sqlalchemy.orm import Session

from reconciliation.retention.deliveries import processed_before
from reconciliation.retention.outbound import closed_before
from reconciliation.retention.protection import OpenAlertRefs, still_waiting
from reconciliation.store.in_lists import chunks
from reconciliation.store.tables import balance_checks as checks
from reconciliation.store.tables import deliveries, holdings, notifications, postings, transfers
from reconciliation.store.tables import outbound_requests as requests
from reconciliation.store.tables import transfer_intents as intents
from reconciliation.transfers.intents import PENDING

#: balanceEffect that raises a balance (drift.balance_sums); every other effect lowers it.
INCREASE: Final = "increase"

#: Transfer refs looked up at once in `transfer_intents`. A batch names a few hundred; at that
#: many the planner may read a table of some hundred thousand intents whole rather than probe
#: its transfer_ref index as often, and the table only grows.
REFS_AT_ONCE: Final = 50


@dataclass(frozen=True, slots=True)
class FactCutoffs:
    """Per kind of reconciled fact: what settled before this moment may go; None: kept.

    `delivery` and `key` are the inbox rows' and the key records' own cutoffs, which a dry run
    judges by (see the module docstring).
    """

    delivery: datetime
    key: datetime
    posting: datetime | None = None
    transfer: datetime | None = None
    notification: datetime | None = None
    match: datetime | None = None


@dataclass(frozen=True, slots=True)
class PostingFacts:
    """What removing a posting changes elsewhere: the pruned horizon of its holding."""

    holding_id: int
    posted_at: datetime
    signed_minor: int


def _in(session: Session, query: Select[Any], column: Any, ids: Iterable[int]) -> list[Any]:
    """`query`'s rows whose `column` is one of `ids`, a bounded list at a time."""
    return [
        r
        for batch in chunks(sorted(set(ids)))
        for r in session.execute(query.where(column.in_(batch)))
    ]


#: Per holding: its latest balance check's snapshot time and postings_through_id; None for a
#: holding never checked.
Basis = dict[int, tuple[datetime, int] | None]


def latest_checks(session: Session, holding_ids: Iterable[int], known: Basis) -> Basis:
    """The latest balance check of each holding, read once per run into `known`.

    The same check drift.balance_sums builds on (latest by observed_at, then id), one probe of
    the (holding_id, observed_at) index each. Read once per run: a pass may record a newer
    check meanwhile, and judging by the older one only keeps more (an earlier snapshot time,
    a lower postings_through_id), never less.
    """
    c = checks
    for holding_id in sorted(set(holding_ids) - set(known)):
        row = session.execute(
            select(c.c.observed_at, c.c.postings_through_id)
            .where(c.c.holding_id == holding_id)
            .order_by(c.c.observed_at.desc(), c.c.id.desc())
            .limit(1)
        ).first()
        known[holding_id] = None if row is None else (row.observed_at, int(row.postings_through_id))
    return known


def postings_that_may_go(
    session: Session,
    ids: Iterable[int],
    cutoffs: FactCutoffs,
    grace_seconds: int,
    guard: OpenAlertRefs,
    known: Basis,
) -> dict[int, PostingFacts | None]:
    """Every existing posting of `ids`: its facts when it may go, None when it must stay."""
    cutoff = cutoffs.posting or datetime.min.replace(tzinfo=cutoffs.delivery.tzinfo)
    p, h = postings, holdings
    waiting = still_waiting(session, "posting", p.c.id, p.c.match_status)
    query = select(
        p.c.id,
        p.c.holding_id,
        h.c.holding_ref,
        p.c.posted_at,
        p.c.ingested_at,
        p.c.effect,
        p.c.amount_minor,
        waiting.label("waiting"),
    ).join(h, h.c.id == p.c.holding_id)
    rows = _in(session, query, p.c.id, ids)
    basis = latest_checks(session, (r.holding_id for r in rows), known)
    grace = timedelta(seconds=grace_seconds)
    found: dict[int, PostingFacts | None] = {}
    for r in rows:
        check = basis.get(r.holding_id)
        may_go = (
            r.posted_at < cutoff
            and r.ingested_at < cutoff
            and not r.waiting
            and not guard.names("posting", r.id)
            and str(r.holding_ref) not in guard.holding_refs
            and check is not None
            and r.posted_at < check[0] - grace
            and r.id <= check[1]
        )
        signed = int(r.amount_minor) if r.effect == INCREASE else -int(r.amount_minor)
        found[int(r.id)] = PostingFacts(r.holding_id, r.posted_at, signed) if may_go else None
    return found


def transfers_that_may_go(
    session: Session,
    ids: Iterable[int],
    cutoffs: FactCutoffs,
    guard: OpenAlertRefs,
    dry_run: bool,
) -> dict[int, Any]:
    """Every existing transfer of `ids`: its transfer_ref when it may go, None when it stays."""
    t = transfers
    waiting = still_waiting(session, "transfer", t.c.id, t.c.match_status)
    query = select(
        t.c.id,
        t.c.transfer_ref,
        t.c.is_terminal,
        t.c.terminal_at,
        t.c.created_at,
        waiting.label("waiting"),
    )
    rows = _in(session, query, t.c.id, ids)
    held = _refs_with_live_keys(session, [r.transfer_ref for r in rows], cutoffs, dry_run)
    cutoff = cutoffs.transfer or datetime.min.replace(tzinfo=cutoffs.key.tzinfo)
    return {
        int(r.id): r.transfer_ref
        if (
            r.is_terminal
            and r.terminal_at is not None
            and r.terminal_at < cutoff
            and r.created_at < cutoff
            and not r.waiting
            and not guard.names("transfer", r.id)
            and r.transfer_ref not in held
        )
        else None
        for r in rows
    }


def _refs_with_live_keys(
    session: Session, refs: list[Any], cutoffs: FactCutoffs, dry_run: bool
) -> set[Any]:
    """Transfer refs whose intent is unanswered or whose Idempotency-Key record is still kept.

    Each intent's key record is joined by the unique key index (an EXISTS under an OR would be
    planned as a hash of every key record instead).
    """
    i, r = intents, requests
    joined = i.outerjoin(r, r.c.idempotency_key == i.c.idempotency_key)
    going = closed_before(cutoffs.key) if dry_run else false()
    held: set[Any] = set()
    for batch in chunks(refs, REFS_AT_ONCE):
        for ref, outcome, key_record, key_goes in session.execute(
            select(i.c.transfer_ref, i.c.outcome, r.c.id, going)
            .select_from(joined)
            .where(i.c.transfer_ref.in_(batch))
        ):
            if outcome == PENDING or (key_record is not None and not key_goes):
                held.add(ref)
    return held


def notifications_that_may_go(
    session: Session,
    ids: Iterable[int],
    cutoffs: FactCutoffs,
    guard: OpenAlertRefs,
    dry_run: bool,
) -> dict[int, bool]:
    """Every existing notification of `ids`: whether it may go."""
    n, d = notifications, deliveries
    waiting = still_waiting(session, "notification", n.c.id, n.c.match_status)
    delivery_goes = processed_before(cutoffs.delivery) if dry_run else false()
    query = select(
        n.c.id,
        n.c.event_id,
        n.c.delivery_pk,
        n.c.created_at,
        waiting.label("waiting"),
        d.c.delivery_id,
        delivery_goes.label("delivery_goes"),
    ).select_from(n.outerjoin(d, d.c.id == n.c.delivery_pk))
    rows = _in(session, query, n.c.id, ids)
    cutoff = cutoffs.notification or datetime.min.replace(tzinfo=cutoffs.delivery.tzinfo)
    return {
        int(r.id): (
            r.created_at < cutoff
            and (
                r.delivery_pk is None
                or (
                    bool(r.delivery_goes)
                    and not guard.names("delivery", r.delivery_pk)
                    and r.delivery_id not in guard.delivery_ids
                )
            )
            and not r.waiting
            and not guard.names("notification", r.id)
            and r.event_id not in guard.delivery_ids
        )
        for r in rows
    }
