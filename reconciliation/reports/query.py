"""The report query: every number of the reconciliation report, read set-wise from the store.

Definitions (docs/decisions.md, "Reconciler"):
- totals by holding and unit, for items whose time falls in [since, until): postings by their
  holding (credits and debits), money notifications by the holding they name, transfers by
  their source holding; matched counts items an active match row names (and denied transfers,
  which need no counterpart), unmatched the rest, across all three streams.
- open exceptions at `until`: items a person must look at: 'exception' items, and items still
  waiting in the match backlog after the notification grace (transfers only once terminal: one
  in flight is not late). Aged from the item's own time, in the buckets 0-1, 2-7, 8-30 and
  over 30 days.
- alerts opened and resolved in the window, by kind and severity; alerts open now.
- balance drift per holding: the latest balance check up to `until`, and the checks over the
  window for the holdings that drifted.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import ColumnElement, Table, case, func, select, true
from sqlalchemy.orm import Session

from reconciliation.alerts import ACKNOWLEDGED, OPEN, SEVERITIES
from reconciliation.matching.backlog import active_row, in_backlog
from reconciliation.matching.vocabulary import MONEY_EVENTS, STATUS_DENIED
from reconciliation.reports.model import (
    AGEING_BUCKETS,
    Ageing,
    AlertCount,
    DriftPoint,
    ExceptionItem,
    HoldingDrift,
    HoldingTotals,
    OpenAlert,
    Report,
    ReportWindow,
)
from reconciliation.store.models import (
    EXCEPTION,
    Alert,
    BalanceCheck,
    Holding,
    Notification,
    Posting,
    Transfer,
)
from reconciliation.store.types import utcnow

postings: Table = Posting.__table__  # type: ignore[assignment]
notifications: Table = Notification.__table__  # type: ignore[assignment]
transfers: Table = Transfer.__table__  # type: ignore[assignment]
holdings: Table = Holding.__table__  # type: ignore[assignment]
checks: Table = BalanceCheck.__table__  # type: ignore[assignment]

#: Open exceptions listed one by one (the oldest); the buckets count all of them.
OLDEST_LISTED: Final = 25

#: Open alerts listed one by one (the most urgent).
OPEN_ALERTS_LISTED: Final = 50

#: Holdings whose drift is drawn over time (the ones that drifted most), and points per line.
DRIFT_LINES: Final = 8
DRIFT_POINTS: Final = 200

#: Stands in for a holding we do not know (a notification naming another account).
UNKNOWN_HOLDING: Final = "(unknown)"


class ReportError(ValueError):
    """The report cannot be built as asked; the message says what to change."""


def build_report(
    session: Session,
    window: ReportWindow,
    *,
    grace_seconds: int = 900,
    now: datetime | None = None,
) -> Report:
    """Read the whole report for `window` in one session."""
    if window.since is not None and window.since >= window.until:
        raise ReportError(
            f"--since ({window.since.isoformat()}) must be before --until ({window.until.isoformat()})"
        )
    holding_id = _holding_id(session, window.holding_ref)
    report = Report(window=window, generated_at=now or utcnow())
    report.totals = _totals(session, window, holding_id)
    report.ageing = _ageing(session, window, holding_id, grace_seconds)
    report.alerts, report.open_alerts = _alerts(session, window)
    report.drift = _drift(session, window, holding_id)
    return report


def _holding_id(session: Session, holding_ref: str | None) -> int | None:
    if holding_ref is None:
        return None
    import uuid

    try:
        ref = uuid.UUID(holding_ref)
    except ValueError:
        raise ReportError(f"--holding {holding_ref!r} is not a holdingRef (a UUID)") from None
    found = session.execute(select(holdings.c.id).where(holdings.c.holding_ref == ref)).scalar()
    if found is None:
        raise ReportError(
            f"no holding {holding_ref} is known to recon (see `recon report` without --holding)"
        )
    return int(found)


def _in_window(column: Any, window: ReportWindow) -> ColumnElement[bool]:
    condition: ColumnElement[bool] = column < window.until
    if window.since is not None:
        condition = condition & (column >= window.since)
    return condition


def _for_holding(column: Any, holding_id: int | None) -> ColumnElement[bool]:
    return true() if holding_id is None else column == holding_id


def _matched_counts(stream: str, table: Table) -> tuple[Any, Any]:
    """SQL sums: items an active match row names (or that need none), and the rest."""
    settled: ColumnElement[bool] = active_row(stream, table.c.id)
    if stream == "transfer":
        settled = settled | (table.c.status == STATUS_DENIED)
    return (
        func.sum(case((settled, 1), else_=0)),
        func.sum(case((settled, 0), else_=1)),
    )


def _totals(session: Session, window: ReportWindow, holding_id: int | None) -> list[HoldingTotals]:
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
        .where(_in_window(p.c.posted_at, window), _for_holding(p.c.holding_id, holding_id))
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
            _in_window(n.c.occurred_at, window),
            _for_holding(h.c.id, holding_id),
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
        .where(_in_window(when, window), _for_holding(h.c.id, holding_id))
        .group_by(t.c.source_holding_ref, t.c.currency)
    ):
        item = row(ref, currency)
        item.transferred_count += int(count)
        item.transferred_minor += int(amount or 0)
        item.matched_count += int(m or 0)
        item.unmatched_count += int(u or 0)
    return sorted(rows.values(), key=lambda r: (r.currency, r.holding_ref))


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
                _for_holding(p.c.holding_id, holding_id),
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
                _for_holding(h.c.id, holding_id),
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
                _for_holding(h.c.id, holding_id),
            ),
        ),
    ]


def _ageing(
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


def _alerts(session: Session, window: ReportWindow) -> tuple[list[AlertCount], list[OpenAlert]]:
    opened: dict[tuple[str, str], int] = defaultdict(int)
    resolved: dict[tuple[str, str], int] = defaultdict(int)
    group = (Alert.kind, Alert.severity)
    for kind, severity, count in session.execute(
        select(*group, func.count()).where(_in_window(Alert.opened_at, window)).group_by(*group)
    ):
        opened[(kind, severity)] += int(count)
    for kind, severity, count in session.execute(
        select(*group, func.count())
        .where(Alert.resolved_at.is_not(None), _in_window(Alert.resolved_at, window))
        .group_by(*group)
    ):
        resolved[(kind, severity)] += int(count)
    counts = [
        AlertCount(
            kind=k, severity=s, opened=opened.get((k, s), 0), resolved=resolved.get((k, s), 0)
        )
        for k, s in sorted(set(opened) | set(resolved), key=lambda ks: (_rank(ks[1]), ks[0]))
    ]
    urgency = case({s: i for i, s in enumerate(SEVERITIES)}, value=Alert.severity, else_=9)
    still_open = [
        OpenAlert(
            alert_id=a.id,
            kind=a.kind,
            severity=a.severity,
            state=a.state,
            subject=a.subject,
            opened_at=a.opened_at,
        )
        for a in session.scalars(
            select(Alert)
            .where(Alert.state.in_((OPEN, ACKNOWLEDGED)), Alert.opened_at < window.until)
            .order_by(urgency, Alert.opened_at)
            .limit(OPEN_ALERTS_LISTED)
        )
    ]
    return counts, still_open


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def _drift(session: Session, window: ReportWindow, holding_id: int | None) -> list[HoldingDrift]:
    c, h = checks, holdings
    latest = (
        select(func.max(c.c.id).label("id"))
        .where(c.c.observed_at < window.until, _for_holding(c.c.holding_id, holding_id))
        .group_by(c.c.holding_id)
        .subquery()
    )
    found: dict[str, HoldingDrift] = {}
    ids: dict[str, int] = {}
    for row in session.execute(
        select(
            h.c.holding_ref,
            h.c.currency,
            c.c.holding_id,
            c.c.observed_at,
            c.c.settled_minor,
            c.c.posted_minor,
            c.c.drift_minor,
            c.c.explained_by_lag,
        )
        .join(latest, latest.c.id == c.c.id)
        .join(h, h.c.id == c.c.holding_id)
    ):
        ref = str(row.holding_ref)
        ids[ref] = int(row.holding_id)
        found[ref] = HoldingDrift(
            holding_ref=ref,
            currency=row.currency,
            observed_at=row.observed_at,
            settled_minor=int(row.settled_minor),
            posted_minor=int(row.posted_minor),
            drift_minor=int(row.drift_minor),
            explained_by_lag=bool(row.explained_by_lag),
        )
    worst = (
        select(c.c.holding_id, func.max(func.abs(c.c.drift_minor)).label("worst"))
        .where(_in_window(c.c.observed_at, window), _for_holding(c.c.holding_id, holding_id))
        .group_by(c.c.holding_id)
        .having(func.max(func.abs(c.c.drift_minor)) > 0)
        .order_by(func.max(func.abs(c.c.drift_minor)).desc())
        .limit(DRIFT_LINES)
    )
    drifting = {int(holding) for holding, _ in session.execute(worst)}
    by_id = {v: k for k, v in ids.items()}
    for holding in drifting:
        points = [
            DriftPoint(observed_at=r[0], drift_minor=int(r[1]), explained_by_lag=bool(r[2]))
            for r in session.execute(
                select(c.c.observed_at, c.c.drift_minor, c.c.explained_by_lag)
                .where(c.c.holding_id == holding, _in_window(c.c.observed_at, window))
                .order_by(c.c.observed_at)
            )
        ]
        step = max(1, len(points) // DRIFT_POINTS)
        if holding in by_id:
            found[by_id[holding]].series = points[::step]
    return sorted(found.values(), key=lambda d: (-abs(d.drift_minor), d.holding_ref))
