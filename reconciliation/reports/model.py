"""The reconciliation report as typed values: built once by the query, drawn by each renderer.

Money is integer minor units throughout, with its currency beside it; renderers format it for
people (text, HTML) or keep it exact (JSON, CSV).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

#: Ageing buckets of open exceptions, in days (docs/architecture.md): label -> (first day, last day).
AGEING_BUCKETS: Final = (("0-1", 0, 1), ("2-7", 2, 7), ("8-30", 8, 30), ("over 30", 31, None))

#: The three streams, in the order a report lists them.
STREAMS: Final = ("posting", "notification", "transfer")


@dataclass(frozen=True, slots=True)
class ReportWindow:
    """What the report covers: [since, until), optionally one holding."""

    until: datetime
    since: datetime | None = None
    holding_ref: str | None = None


@dataclass(slots=True)
class HoldingTotals:
    """One holding and unit: what was posted, notified, transferred, and how much matched."""

    holding_ref: str
    currency: str
    posted_count: int = 0
    credits_minor: int = 0
    debits_minor: int = 0
    notified_count: int = 0
    notified_minor: int = 0
    transferred_count: int = 0
    transferred_minor: int = 0
    matched_count: int = 0
    unmatched_count: int = 0

    @property
    def posted_minor(self) -> int:
        """Net movement: credits minus debits."""
        return self.credits_minor - self.debits_minor


@dataclass(frozen=True, slots=True)
class ExceptionItem:
    """One open exception, for the detail table."""

    stream: str
    item_id: int
    reference: str
    holding_ref: str
    currency: str
    amount_minor: int
    since: datetime
    age_days: int
    status: str


@dataclass(slots=True)
class Ageing:
    """Open exceptions by ageing bucket and stream: counts and amounts (by currency)."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    amounts: dict[str, dict[str, int]] = field(default_factory=dict)
    oldest: list[ExceptionItem] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(sum(by_stream.values()) for by_stream in self.counts.values())


@dataclass(frozen=True, slots=True)
class AlertCount:
    kind: str
    severity: str
    opened: int
    resolved: int


@dataclass(frozen=True, slots=True)
class OpenAlert:
    alert_id: int
    kind: str
    severity: str
    state: str
    subject: str
    opened_at: datetime


@dataclass(frozen=True, slots=True)
class DriftPoint:
    observed_at: datetime
    drift_minor: int
    explained_by_lag: bool


@dataclass(slots=True)
class HoldingDrift:
    """A holding's balance against its postings: the latest check, and the checks over time."""

    holding_ref: str
    currency: str
    observed_at: datetime
    settled_minor: int
    posted_minor: int
    drift_minor: int
    explained_by_lag: bool
    series: list[DriftPoint] = field(default_factory=list)


@dataclass(slots=True)
class Report:
    window: ReportWindow
    generated_at: datetime
    totals: list[HoldingTotals] = field(default_factory=list)
    ageing: Ageing = field(default_factory=Ageing)
    alerts: list[AlertCount] = field(default_factory=list)
    open_alerts: list[OpenAlert] = field(default_factory=list)
    drift: list[HoldingDrift] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Headline numbers, for the top of every format."""
        return {
            "holdings": len(self.totals),
            "matched": sum(t.matched_count for t in self.totals),
            "unmatched": sum(t.unmatched_count for t in self.totals),
            "openExceptions": self.ageing.total,
            "alertsOpened": sum(a.opened for a in self.alerts),
            "alertsResolved": sum(a.resolved for a in self.alerts),
            "openAlerts": len(self.open_alerts),
            "holdingsDrifting": sum(
                1 for d in self.drift if d.drift_minor and not d.explained_by_lag
            ),
        }
