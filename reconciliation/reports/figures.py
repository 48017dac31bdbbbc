"""Every item figure of the report, added up from `items.classified` and nothing else.

One grouped query per stream (holding, currency, state, detail, age bucket) yields totals per
holding, exceptions by age and, through `Report.figures`, the headline numbers: they are sums
of the same rows, so they agree by construction (and tests/integration/reconciliation/
test_report_figures.py checks it on generated stores). The list of open items is the same
select again, filtered to what is not matched.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reconciliation.reports.filters import UNKNOWN_HOLDING
from reconciliation.reports.items import FINALITY_SECONDS, age_bucket, classified, why_open
from reconciliation.reports.model import (
    AGEING_BUCKETS,
    EXCEPTION,
    STREAMS,
    WAITING,
    Ageing,
    HoldingName,
    HoldingTotals,
    OpenItem,
    ReportWindow,
)
from reconciliation.store.tables import holdings, locators
from reconciliation.store.types import amount_sum

#: Open items listed one by one, oldest first; the figures count all of them, and every format
#: says how many of how many it lists.
OPEN_ITEMS_LISTED: Final = 100

#: Stands in for a currency an item does not state.
NO_CURRENCY: Final = "?"


def _ref(value: Any) -> str:
    return str(value) if value is not None else UNKNOWN_HOLDING


def item_figures(
    session: Session,
    window: ReportWindow,
    holding_id: int | None,
    grace_seconds: int,
    finality_seconds: int = FINALITY_SECONDS,
) -> tuple[list[HoldingTotals], Ageing]:
    """Totals per holding and unit, and exceptions by age, from one grouped read per stream."""
    rows: dict[tuple[str, str], HoldingTotals] = {}
    ageing = Ageing(
        counts={label: {} for label, _, _ in AGEING_BUCKETS},
        amounts={label: {} for label, _, _ in AGEING_BUCKETS},
    )
    for stream in STREAMS:
        items = classified(stream, window, holding_id, grace_seconds, finality_seconds).subquery()
        bucket = age_bucket(items.c.at, window.until).label("bucket")
        grouped = select(
            items.c.holding_ref,
            items.c.currency,
            items.c.state,
            items.c.detail,
            bucket,
            func.count(),
            amount_sum(items.c.amount),
        ).group_by(items.c.holding_ref, items.c.currency, items.c.state, items.c.detail, bucket)
        for ref, currency, state, detail, label, n, total in session.execute(grouped):
            key = (_ref(ref), currency or NO_CURRENCY)
            totals = rows.setdefault(key, HoldingTotals(holding_ref=key[0], currency=key[1]))
            _add(totals, stream, state, detail, int(n), int(total or 0))
            if state == EXCEPTION:
                by_stream = ageing.counts[label]
                by_stream[stream] = by_stream.get(stream, 0) + int(n)
                by_currency = ageing.amounts[label]
                by_currency[key[1]] = by_currency.get(key[1], 0) + int(total or 0)
    return sorted(rows.values(), key=lambda r: (r.currency, r.holding_ref)), ageing


def _add(
    totals: HoldingTotals, stream: str, state: str, detail: str, count: int, amount: int
) -> None:
    """One group of items into its holding's totals."""
    totals.states[state] += count
    if stream == "posting":
        totals.posted_count += count
        if detail == "credit":
            totals.credits_minor += amount
        else:
            totals.debits_minor += amount
    elif stream == "notification":
        totals.notified_count += count
        totals.notified_minor += amount
    else:
        tally = totals.transfers[detail]
        tally.count += count
        tally.amount_minor += amount


def open_items(
    session: Session,
    window: ReportWindow,
    holding_id: int | None,
    grace_seconds: int,
    limit: int = OPEN_ITEMS_LISTED,
    finality_seconds: int = FINALITY_SECONDS,
) -> list[OpenItem]:
    """The unmatched items (waiting and exceptions), oldest first, at most `limit`."""
    found: list[OpenItem] = []
    for stream in STREAMS:
        items = classified(stream, window, holding_id, grace_seconds, finality_seconds).subquery()
        query = (
            select(items)
            .where(items.c.state.in_((WAITING, EXCEPTION)))
            .order_by(items.c.at, items.c.item_id)
            .limit(limit)
        )
        for row in session.execute(query):
            found.append(
                OpenItem(
                    stream=stream,
                    item_id=int(row.item_id),
                    reference=str(row.reference),
                    holding_ref=_ref(row.holding_ref),
                    currency=row.currency or NO_CURRENCY,
                    amount_minor=int(row.amount or 0),
                    since=row.at,
                    age_days=(window.until - row.at).days,
                    state=row.state,
                    why=why_open(stream, row.state, row.detail, row.marked),
                )
            )
    found.sort(key=lambda item: (item.since, item.stream, item.item_id))
    return found[:limit]


def holding_names(session: Session, refs: set[str]) -> dict[str, HoldingName]:
    """Account number and name per holding, from its first locator (if it has one)."""
    wanted = []
    for ref in refs:
        try:
            wanted.append(uuid.UUID(ref))
        except ValueError:
            continue  # the unknown holding has no name to find
    if not wanted:
        return {}
    h, loc = holdings, locators
    first = (
        select(loc.c.holding_id, func.min(loc.c.id).label("id"))
        .group_by(loc.c.holding_id)
        .subquery()
    )
    query = (
        select(h.c.holding_ref, loc.c.account_number, loc.c.account_name)
        .join(first, first.c.holding_id == h.c.id)
        .join(loc, loc.c.id == first.c.id)
        .where(h.c.holding_ref.in_(wanted))
    )
    return {
        str(ref): HoldingName(account_number=number, account_name=name)
        for ref, number, name in session.execute(query)
    }
