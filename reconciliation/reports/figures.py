"""Every item figure of the report, added up from `items.classified` and nothing else.

One grouped query per stream (holding, currency, state, detail, age bucket) yields totals per
holding, exceptions by age and, through `Report.figures`, the headline numbers: they are sums
of the same rows, so they agree by construction (and tests/integration/reconciliation/
test_report_figures.py checks it on generated stores). The list of open items is the same
select again, filtered to what is not matched.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reconciliation.matching.vocabulary import EVENT_SIDE
from reconciliation.reports.filters import UNKNOWN_HOLDING
from reconciliation.reports.items import FINALITY_SECONDS, age_bucket, classified, why_open
from reconciliation.reports.model import (
    AGEING_BUCKETS,
    EXCEPTION,
    STREAMS,
    WAITING,
    Ageing,
    HoldingTotals,
    OpenItem,
    ReportWindow,
)
from reconciliation.store.types import amount_sum

#: Open items listed one by one, oldest first; the figures count all of them, and every format
#: says how many of how many it lists.
OPEN_ITEMS_LISTED: Final = 100

#: Open items the CSV of items lists: a work list for a spreadsheet, so far more than a page,
#: but bounded (a store in an incident can hold millions, and the file is built in memory);
#: a tenth of what a spreadsheet opens. Its `window` section says how many were listed.
CSV_ITEMS_LISTED: Final = 100_000

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


#: The side a transfer we asked for moves money on the holding it is listed under: its source.
TRANSFER_SIDE: Final = "debit"


def _side(stream: str, detail: object) -> str:
    """`credit` or `debit` on the item's holding: a posting's own side, a notification's by its
    event type, a transfer's on its source holding."""
    if stream == "posting":
        return str(detail or "")
    if stream == "notification":
        return EVENT_SIDE.get(str(detail), "")
    return TRANSFER_SIDE


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
                    side=_side(stream, row.detail),
                )
            )
    found.sort(key=lambda item: (item.since, item.stream, item.item_id))
    return found[:limit]
