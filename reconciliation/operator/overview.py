"""Is recon healthy right now: the figures the console's overview shows (and the CLI could).

Each figure is one bounded, index-driven query, so the overview answers in milliseconds with a
million postings in the store: inbox depth by state (the state index), the oldest pending
delivery (state, received_at), the activity cursors that lag most (one index probe per listed
holding for its newest posting), the webhook registrations, the last reconciliation pass (its
watermarks), active alerts by severity with the age of the oldest, and the exceptions to look
at (`reconciliation.operator.exception_queue`: the report's definition over the unmatched branches only,
counted up to a cap per stream).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from sqlalchemy import func, nulls_first, select
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import ACKNOWLEDGED, OPEN, SEVERITIES
from reconciliation.notifications.inbox import PENDING, QUARANTINED
from reconciliation.notifications.inbox_access import inbox_depth
from reconciliation.operator.exception_queue import counts as exception_counts
from reconciliation.reconcile import LAST_PASS_AT, LAST_PASS_MILLIS
from reconciliation.reports.items import FINALITY_SECONDS
from reconciliation.store import watermarks
from reconciliation.store.models import (
    ActivityCursor,
    Alert,
    Delivery,
    Holding,
    Posting,
    Subscription,
)

#: Holdings listed on the overview, those whose cursor moved longest ago first: the overview
#: shows where to look, the holdings page lists them all a page at a time.
LAGGING_LISTED: Final = 10
#: Webhook registrations listed (normally one; a few during a rotation).
SUBSCRIPTIONS_LISTED: Final = 5


@dataclass(frozen=True, slots=True)
class CursorLag:
    """One holding's activity cursor: how fresh its postings are, and when it last moved."""

    holding_id: int
    holding_ref: str
    currency: str
    newest_posting_at: datetime | None
    cursor_moved_at: datetime | None
    last_polled_at: datetime | None
    consecutive_errors: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class SubscriptionState:
    """One webhook registration as last read from the company API."""

    webhook_id: str
    url: str
    status: str
    total: int
    successful: int
    failed: int
    last_triggered: datetime | None
    checked_at: datetime | None
    retired_at: datetime | None


@dataclass(frozen=True, slots=True)
class SeverityCount:
    """Active alerts of one severity: how many, and when the oldest was opened."""

    severity: str
    open: int
    acknowledged: int
    oldest_opened_at: datetime | None


@dataclass(slots=True)
class Overview:
    """Everything the overview page shows, as of `now`."""

    now: datetime
    pending: int
    quarantined: int
    oldest_pending_at: datetime | None
    holdings: int
    lagging: list[CursorLag]
    subscriptions: list[SubscriptionState]
    last_pass_at: datetime | None
    last_pass_millis: int | None
    alerts: list[SeverityCount] = field(default_factory=list)
    exceptions: int = 0
    #: False when a stream had more unmatched items than the count looks at (`exceptions` is
    #: then a floor: "at least").
    exceptions_complete: bool = True

    @property
    def active_alerts(self) -> int:
        return sum(s.open + s.acknowledged for s in self.alerts)


def _lagging(session: Session) -> list[CursorLag]:
    newest = (
        select(func.max(Posting.posted_at))
        .where(Posting.holding_id == ActivityCursor.holding_id)
        .scalar_subquery()
    )
    rows = session.execute(
        select(
            ActivityCursor.holding_id,
            Holding.holding_ref,
            Holding.currency,
            newest,
            ActivityCursor.last_advanced_at,
            ActivityCursor.last_polled_at,
            ActivityCursor.consecutive_errors,
            ActivityCursor.last_error,
        )
        .join(Holding, Holding.id == ActivityCursor.holding_id)
        .order_by(
            ActivityCursor.consecutive_errors.desc(),
            nulls_first(ActivityCursor.last_advanced_at.asc()),
            ActivityCursor.holding_id,
        )
        .limit(LAGGING_LISTED)
    )
    return [
        CursorLag(
            holding_id=r[0],
            holding_ref=str(r[1]),
            currency=r[2],
            newest_posting_at=r[3],
            cursor_moved_at=r[4],
            last_polled_at=r[5],
            consecutive_errors=r[6] or 0,
            last_error=r[7],
        )
        for r in rows
    ]


def _subscriptions(session: Session) -> list[SubscriptionState]:
    rows = session.scalars(
        select(Subscription)
        .order_by(nulls_first(Subscription.retired_at.desc()), Subscription.id.desc())
        .limit(SUBSCRIPTIONS_LISTED)
    )
    return [
        SubscriptionState(
            webhook_id=s.webhook_id,
            url=s.url,
            status=s.status,
            total=s.total_deliveries,
            successful=s.successful_deliveries,
            failed=s.failed_deliveries,
            last_triggered=s.last_triggered,
            checked_at=s.checked_at,
            retired_at=s.retired_at,
        )
        for s in rows
    ]


def _alerts(session: Session) -> list[SeverityCount]:
    found: dict[str, dict[str, int]] = {s: {OPEN: 0, ACKNOWLEDGED: 0} for s in SEVERITIES}
    oldest: dict[str, datetime] = {}
    for severity, state, count, first in session.execute(
        select(Alert.severity, Alert.state, func.count(), func.min(Alert.opened_at))
        .where(Alert.state.in_((OPEN, ACKNOWLEDGED)))
        .group_by(Alert.severity, Alert.state)
    ):
        found.setdefault(severity, {OPEN: 0, ACKNOWLEDGED: 0})[state] = int(count)
        if first is not None and (severity not in oldest or first < oldest[severity]):
            oldest[severity] = first
    return [
        SeverityCount(s, by_state[OPEN], by_state[ACKNOWLEDGED], oldest.get(s))
        for s, by_state in found.items()
    ]


def read_overview(
    session: Session,
    *,
    now: datetime,
    grace_seconds: int,
    finality_seconds: int = FINALITY_SECONDS,
) -> Overview:
    """The health figures as of `now`; `grace_seconds` is the notification grace of the pass,
    `finality_seconds` its finality deadline (a transfer in flight past it is an exception)."""
    depth = inbox_depth(session)
    oldest_pending = session.scalar(
        select(Delivery.received_at)
        .where(Delivery.state == PENDING)
        .order_by(Delivery.received_at)
        .limit(1)
    )
    last_pass = watermarks.read(session, LAST_PASS_AT, 0)
    duration = watermarks.read(session, LAST_PASS_MILLIS, -1)
    by_bucket = exception_counts(session, now, grace_seconds, finality_seconds=finality_seconds)
    return Overview(
        now=now,
        pending=depth[PENDING],
        quarantined=depth[QUARANTINED],
        oldest_pending_at=oldest_pending,
        holdings=int(session.scalar(select(func.count()).select_from(Holding)) or 0),
        lagging=_lagging(session),
        subscriptions=_subscriptions(session),
        last_pass_at=watermarks.from_millis(last_pass) if last_pass else None,
        last_pass_millis=duration if duration >= 0 else None,
        alerts=_alerts(session),
        exceptions=by_bucket.total,
        exceptions_complete=by_bucket.complete,
    )
