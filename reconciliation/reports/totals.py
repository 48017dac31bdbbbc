"""Report totals by holding and unit: posted, notified, transferred, matched, unmatched."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Table, case, func, select
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import active_row
from reconciliation.matching.vocabulary import MONEY_EVENTS, STATUS_DENIED
from reconciliation.reports.filters import UNKNOWN_HOLDING, for_holding, in_window
from reconciliation.reports.model import HoldingTotals, ReportWindow
from reconciliation.store.models import Holding, Notification, Posting, Transfer

postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]
holdings: Table = Holding.__table__  # type: ignore[assignment]


def _matched_counts(stream: str, table: Table) -> tuple[Any, Any]:
    """SQL sums: items an active match row names (or that need none), and the rest."""
    settled: ColumnElement[bool] = active_row(stream, table.c.id)
    if stream == "transfer":
        settled = settled | (table.c.status == STATUS_DENIED)
    return (
        func.sum(case((settled, 1), else_=0)),
        func.sum(case((settled, 0), else_=1)),
    )


def holding_totals(
    session: Session, window: ReportWindow, holding_id: int | None
) -> list[HoldingTotals]:
    rows: dict[tuple[str, str], HoldingTotals] = {}

    def row(ref: Any, currency: Any) -> HoldingTotals:
        key = (str(ref) if ref is not None else UNKNOWN_HOLDING, currency or "?")
        if key not in rows:
            rows[key] = HoldingTotals(holding_ref=key[0], currency=key[1])
        return rows[key]

    p, n, t, h = postings, notifications, transfers, holdings
    credit = p.c.side == "credit"
    matched, unmatched = _matched_counts("posting", p)
    for ref, currency, count, credits, debits, m, u in session.execute(
        select(
            h.c.holding_ref,
            p.c.currency,
            func.count(),
            func.sum(case((credit, p.c.amount_minor), else_=0)),
            func.sum(case((credit, 0), else_=p.c.amount_minor)),
            matched,
            unmatched,
        )
        .join(h, h.c.id == p.c.holding_id)
        .where(in_window(p.c.posted_at, window), for_holding(p.c.holding_id, holding_id))
        .group_by(h.c.holding_ref, p.c.currency)
    ):
        item = row(ref, currency)
        item.posted_count += int(count)
        item.credits_minor += int(credits or 0)
        item.debits_minor += int(debits or 0)
        item.matched_count += int(m or 0)
        item.unmatched_count += int(u or 0)

    matched, unmatched = _matched_counts("notification", n)
    for ref, currency, count, amount, m, u in session.execute(
        select(
            n.c.holding_ref,
            n.c.currency,
            func.count(),
            func.sum(n.c.amount_minor),
            matched,
            unmatched,
        )
        .select_from(n.outerjoin(h, h.c.holding_ref == n.c.holding_ref))
        .where(
            n.c.event_type.in_(MONEY_EVENTS),
            in_window(n.c.occurred_at, window),
            for_holding(h.c.id, holding_id),
        )
        .group_by(n.c.holding_ref, n.c.currency)
    ):
        item = row(ref, currency)
        item.notified_count += int(count)
        item.notified_minor += int(amount or 0)
        item.matched_count += int(m or 0)
        item.unmatched_count += int(u or 0)

    matched, unmatched = _matched_counts("transfer", t)
    when = func.coalesce(t.c.requested_at, t.c.created_at)
    for ref, currency, count, amount, m, u in session.execute(
        select(
            t.c.source_holding_ref,
            t.c.currency,
            func.count(),
            func.sum(t.c.amount_minor),
            matched,
            unmatched,
        )
        .select_from(t.outerjoin(h, h.c.holding_ref == t.c.source_holding_ref))
        .where(in_window(when, window), for_holding(h.c.id, holding_id))
        .group_by(t.c.source_holding_ref, t.c.currency)
    ):
        item = row(ref, currency)
        item.transferred_count += int(count)
        item.transferred_minor += int(amount or 0)
        item.matched_count += int(m or 0)
        item.unmatched_count += int(u or 0)
    return sorted(rows.values(), key=lambda r: (r.currency, r.holding_ref))
