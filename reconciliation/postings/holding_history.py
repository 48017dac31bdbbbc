"""A holding as the console shows it: its balance checks over time, its drift, its postings.

The balance-against-posted-sum series comes from `balance_checks` (one row per snapshot, the
posted sum already computed by the pass), so drawing it never re-sums the ledger. Postings are
keyset-paged on (posted_at, id) newest first, which the (holding_id, posted_at) index serves
directly; the holdings list is keyset-paged on id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from foundation import excerpt, row_id
from reconciliation.postings.holding_identity import (
    HoldingIdentity,
    find_holdings,
    holding_identities,
    holding_identity,
)
from reconciliation.store.models import (
    ActivityCursor,
    BalanceCheck,
    BalanceSnapshot,
    Holding,
    Match,
    Posting,
)

#: Balance checks drawn on the chart (the newest ones).
CHART_POINTS: Final = 200
#: Checks with drift listed under the chart.
DRIFT_LISTED: Final = 50
#: Most rows on one page of postings or holdings.
PAGE_MAX: Final = 200


class HoldingError(Exception):
    """No such holding, or a cursor that is not one of ours."""


@dataclass(frozen=True, slots=True)
class HoldingRow:
    """One line of the holdings list."""

    holding: Holding
    newest_posting_at: datetime | None
    cursor: ActivityCursor | None
    named: HoldingIdentity


@dataclass(frozen=True, slots=True)
class HoldingList:
    rows: list[HoldingRow]
    next_after: int | None


@dataclass(frozen=True, slots=True)
class HoldingView:
    """One holding: the chart's series, the drift history, a page of postings."""

    holding: Holding
    named: HoldingIdentity
    cursor: ActivityCursor | None
    latest_snapshot: BalanceSnapshot | None
    checks: list[BalanceCheck]
    drifts: list[BalanceCheck]
    postings: list[Posting]
    next_postings: str | None
    #: posting id -> its active match row (`postings.match_status` does not say matched).
    matched: dict[int, int]


def list_holdings(
    session: Session, *, after: int | None = None, search: str | None = None, limit: int = 50
) -> HoldingList:
    """Holdings by id, with cursor state: every one, or those `search` names (an account
    number, part of an account name, or a holdingRef: `holding_identity.find_holdings`)."""
    size = max(1, min(limit, PAGE_MAX))
    newest = (
        select(func.max(Posting.posted_at))
        .where(Posting.holding_id == Holding.id)
        .scalar_subquery()
    )
    query = (
        select(Holding, newest, ActivityCursor)
        .outerjoin(ActivityCursor, ActivityCursor.holding_id == Holding.id)
        .order_by(Holding.id)
        .limit(size + 1)
    )
    if after is not None:
        query = query.where(Holding.id > after)
    if search:
        found = find_holdings(session, search)
        query = query.where(Holding.id.in_([h.holding_id for h in found]))
    listed = list(session.execute(query))
    names = holding_identities(session, [h.holding_ref for h, _, _ in listed])
    rows = [HoldingRow(h, at, c, names[str(h.holding_ref)]) for h, at, c in listed]
    more = len(rows) > size
    rows = rows[:size]
    return HoldingList(rows, rows[-1].holding.id if more and rows else None)


def holding_view(
    session: Session, holding_id: int, *, cursor: str | None = None, limit: int = 50
) -> HoldingView:
    """One holding with its newest checks, drifts and one page of postings after `cursor`."""
    holding = session.get(Holding, holding_id)
    if holding is None:
        raise HoldingError(f"no holding has id {holding_id}")
    checks = list(
        session.scalars(
            select(BalanceCheck)
            .where(BalanceCheck.holding_id == holding_id)
            .order_by(BalanceCheck.observed_at.desc(), BalanceCheck.id.desc())
            .limit(CHART_POINTS)
        )
    )
    checks.reverse()
    drifts = list(
        session.scalars(
            select(BalanceCheck)
            .where(BalanceCheck.holding_id == holding_id, BalanceCheck.drift_minor != 0)
            .order_by(BalanceCheck.observed_at.desc(), BalanceCheck.id.desc())
            .limit(DRIFT_LISTED)
        )
    )
    snapshot = session.scalars(
        select(BalanceSnapshot)
        .where(BalanceSnapshot.holding_id == holding_id)
        .order_by(BalanceSnapshot.observed_at.desc(), BalanceSnapshot.id.desc())
        .limit(1)
    ).first()
    size = max(1, min(limit, PAGE_MAX))
    query = (
        select(Posting)
        .where(Posting.holding_id == holding_id)
        .order_by(Posting.posted_at.desc(), Posting.id.desc())
        .limit(size + 1)
    )
    if cursor:
        at_text, _, id_text = cursor.rpartition("/")
        try:
            at, last = datetime.fromisoformat(at_text), row_id(id_text, what="cursor")
        except ValueError:
            raise HoldingError(
                f"cursor {excerpt(cursor)} is not valid: use the page's own links"
            ) from None
        query = query.where(
            or_(Posting.posted_at < at, and_(Posting.posted_at == at, Posting.id < last))
        )
    postings = list(session.scalars(query))
    more = len(postings) > size
    postings = postings[:size]
    next_cursor = (
        f"{postings[-1].posted_at.isoformat()}/{postings[-1].id}" if more and postings else None
    )
    matched = {
        posting_id: match_id
        for posting_id, match_id in session.execute(
            select(Match.posting_id, Match.id)
            .where(Match.posting_id.in_([p.id for p in postings]), Match.unmatched_at.is_(None))
            # A posting is in at most one active row: one row per posting listed.
            .limit(len(postings) or 1)
        )
        if posting_id is not None
    }
    return HoldingView(
        holding=holding,
        named=holding_identity(session, holding.holding_ref),
        cursor=session.get(ActivityCursor, holding_id),
        latest_snapshot=snapshot,
        checks=checks,
        drifts=drifts,
        postings=postings,
        next_postings=next_cursor,
        matched=matched,
    )
