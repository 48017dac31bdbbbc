"""Open exceptions at the end of the window, by ageing bucket, and the oldest of them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import ColumnElement, Table, case, func, select, true
from sqlalchemy.orm import Session

from reconciliation.matching.backlog import in_backlog
from reconciliation.matching.vocabulary import MONEY_EVENTS
from reconciliation.reports.filters import UNKNOWN_HOLDING, for_holding
from reconciliation.reports.model import AGEING_BUCKETS, Ageing, ExceptionItem, ReportWindow
from reconciliation.store.models import EXCEPTION, Holding, Notification, Posting, Transfer

postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]
holdings: Table = Holding.__table__  # type: ignore[assignment]

#: Open exceptions listed one by one (the oldest); the buckets count all of them.
OLDEST_LISTED: Final = 25


def _bucket(column: Any, until: datetime) -> Any:
    """SQL: the ageing bucket label of a time, as of `until` (whole days of age)."""
    whens = [
        (column > until - timedelta(days=last + 1), label)
        for label, _, last in AGEING_BUCKETS
        if last is not None
    ]
    return case(*whens, else_=AGEING_BUCKETS[-1][0])


def _open_items(window: ReportWindow, holding_id: int | None, grace_seconds: int) -> list[Any]:
    """Per stream: a select of (time, holding_ref, currency, amount, id, reference, status)."""
    late = window.until - timedelta(seconds=grace_seconds)
    p, n, t, h = postings, notifications, transfers, holdings

    def waiting(stream: str, table: Table, when: Any) -> ColumnElement[bool]:
        condition: ColumnElement[bool] = (table.c.match_status == EXCEPTION) | (
            in_backlog(stream, table.c.id) & (when <= late)
        )
        return condition

    when_t = func.coalesce(t.c.requested_at, t.c.created_at)
    return [
        (
            "posting",
            select(
                p.c.posted_at.label("at"),
                h.c.holding_ref,
                p.c.currency,
                p.c.amount_minor,
                p.c.id,
                p.c.receipt_ref.label("reference"),
                p.c.match_status,
            )
            .join(h, h.c.id == p.c.holding_id)
            .where(
                waiting("posting", p, p.c.posted_at),
                p.c.posted_at < window.until,
                for_holding(p.c.holding_id, holding_id),
            ),
        ),
        (
            "notification",
            select(
                n.c.occurred_at.label("at"),
                n.c.holding_ref,
                n.c.currency,
                n.c.amount_minor,
                n.c.id,
                n.c.event_id.label("reference"),
                n.c.match_status,
            )
            .select_from(n.outerjoin(h, h.c.holding_ref == n.c.holding_ref))
            .where(
                n.c.event_type.in_(MONEY_EVENTS),
                waiting("notification", n, n.c.occurred_at),
                n.c.occurred_at < window.until,
                for_holding(h.c.id, holding_id),
            ),
        ),
        (
            "transfer",
            select(
                when_t.label("at"),
                t.c.source_holding_ref,
                t.c.currency,
                t.c.amount_minor,
                t.c.id,
                t.c.transfer_ref.label("reference"),
                t.c.match_status,
            )
            .select_from(t.outerjoin(h, h.c.holding_ref == t.c.source_holding_ref))
            .where(
                t.c.is_terminal == true(),
                waiting("transfer", t, when_t),
                when_t < window.until,
                for_holding(h.c.id, holding_id),
            ),
        ),
    ]


def open_exceptions(
    session: Session, window: ReportWindow, holding_id: int | None, grace_seconds: int
) -> Ageing:
    ageing = Ageing(
        counts={label: {} for label, _, _ in AGEING_BUCKETS},
        amounts={label: {} for label, _, _ in AGEING_BUCKETS},
    )
    oldest: list[ExceptionItem] = []
    for stream, query in _open_items(window, holding_id, grace_seconds):
        items = query.subquery()
        bucket = _bucket(items.c.at, window.until).label("bucket")
        for label, currency, count, amount in session.execute(
            select(bucket, items.c.currency, func.count(), func.sum(items.c.amount_minor)).group_by(
                bucket, items.c.currency
            )
        ):
            counts = ageing.counts[label]
            counts[stream] = counts.get(stream, 0) + int(count)
            amounts = ageing.amounts[label]
            key = currency or "?"
            amounts[key] = amounts.get(key, 0) + int(amount or 0)
        for at, ref, currency, amount, item_id, reference, status in session.execute(
            query.order_by(query.selected_columns.at).limit(OLDEST_LISTED)
        ):
            oldest.append(
                ExceptionItem(
                    stream=stream,
                    item_id=int(item_id),
                    reference=str(reference),
                    holding_ref=str(ref) if ref is not None else UNKNOWN_HOLDING,
                    currency=currency or "?",
                    amount_minor=int(amount or 0),
                    since=at,
                    age_days=(window.until - at).days,
                    status=status,
                )
            )
    ageing.oldest = sorted(oldest, key=lambda e: e.since)[:OLDEST_LISTED]
    return ageing
