"""Alerts opened and resolved in the window, alerts open now, and balance drift per holding."""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import ACKNOWLEDGED, OPEN, SEVERITIES
from reconciliation.reports.filters import for_holding, in_window
from reconciliation.reports.model import (
    AlertCount,
    DriftPoint,
    HoldingDrift,
    OpenAlert,
    ReportWindow,
)
from reconciliation.store.models import Alert
from reconciliation.store.tables import balance_checks as checks
from reconciliation.store.tables import holdings
from reconciliation.store.types import amount_abs, amount_max, amount_order

#: Open alerts listed one by one (the most urgent).
OPEN_ALERTS_LISTED: Final = 50

#: Holdings whose drift is drawn over time (the ones that drifted most), and points per line.
DRIFT_LINES: Final = 8
DRIFT_POINTS: Final = 200


def alert_counts(
    session: Session, window: ReportWindow
) -> tuple[list[AlertCount], list[OpenAlert], int]:
    """Alerts opened and resolved in the window by kind; the open ones (listed, and counted).

    Open means open or acknowledged now, among alerts opened before the window's end. Alerts
    are about conditions, not only items, so they are not narrowed to one holding.
    """
    opened: dict[tuple[str, str], int] = defaultdict(int)
    resolved: dict[tuple[str, str], int] = defaultdict(int)
    group = (Alert.kind, Alert.severity)
    for kind, severity, count in session.execute(
        select(*group, func.count()).where(in_window(Alert.opened_at, window)).group_by(*group)
    ):
        opened[(kind, severity)] += int(count)
    for kind, severity, count in session.execute(
        select(*group, func.count())
        .where(Alert.resolved_at.is_not(None), in_window(Alert.resolved_at, window))
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
    is_open = (Alert.state.in_((OPEN, ACKNOWLEDGED)), Alert.opened_at < window.until)
    open_count = int(
        session.execute(select(func.count()).select_from(Alert).where(*is_open)).scalar_one()
    )
    still_open = [
        OpenAlert(
            alert_id=a.id,
            kind=a.kind,
            severity=a.severity,
            state=a.state,
            subject=a.subject,
            opened_at=a.opened_at,
            acknowledged_by=a.acknowledged_by,
            note=a.note,
        )
        for a in session.scalars(
            select(Alert)
            .where(*is_open)
            .order_by(urgency, Alert.opened_at, Alert.id)
            .limit(OPEN_ALERTS_LISTED)
        )
    ]
    return counts, still_open, open_count


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def balance_drift(
    session: Session, window: ReportWindow, holding_id: int | None
) -> list[HoldingDrift]:
    c, h = checks, holdings
    latest = (
        select(func.max(c.c.id).label("id"))
        .where(c.c.observed_at < window.until, for_holding(c.c.holding_id, holding_id))
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
    largest = amount_max(amount_abs(c.c.drift_minor))
    worst = (
        select(c.c.holding_id, largest.label("worst"))
        .where(in_window(c.c.observed_at, window), for_holding(c.c.holding_id, holding_id))
        .group_by(c.c.holding_id)
        .having(largest != 0)
        .order_by(amount_order(largest).desc())
        .limit(DRIFT_LINES)
    )
    drifting = {int(holding) for holding, _ in session.execute(worst)}
    by_id = {v: k for k, v in ids.items()}
    for holding in drifting:
        points = [
            DriftPoint(observed_at=r[0], drift_minor=int(r[1]), explained_by_lag=bool(r[2]))
            for r in session.execute(
                select(c.c.observed_at, c.c.drift_minor, c.c.explained_by_lag)
                .where(c.c.holding_id == holding, in_window(c.c.observed_at, window))
                .order_by(c.c.observed_at)
            )
        ]
        step = max(1, len(points) // DRIFT_POINTS)
        if holding in by_id:
            found[by_id[holding]].series = points[::step]
    return sorted(found.values(), key=lambda d: (-abs(d.drift_minor), d.holding_ref))
