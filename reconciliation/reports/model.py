"""The reconciliation report as typed values: built once by the query, drawn by each renderer.

Money is integer minor units throughout, with its currency beside it; renderers format it for
people (text, HTML, through `foundation.money.format_money`) or keep it exact (JSON, CSV).
What each figure means is defined once, in `reconciliation.reports.legend` and
`reconciliation.reports.items`; `Report.figures` is the only place the headline numbers are
added up, so every format shows the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from reconciliation.ledger_audit.summary import NEVER, AuditSummary
from reconciliation.postings.holding_identity import HoldingIdentity

#: Ageing buckets of open exceptions, in days: label -> (first day, last day).
AGEING_BUCKETS: Final = (("0-1", 0, 1), ("2-7", 2, 7), ("8-30", 8, 30), ("over 30", 31, None))

#: The three streams, in the order a report lists them.
STREAMS: Final = ("posting", "notification", "transfer")

#: Where an item stands (reconciliation.reports.items decides): every item in the window is in
#: exactly one of these.
MATCHED: Final = "matched"
ACCEPTED: Final = "accepted"
WAITING: Final = "waiting"
EXCEPTION: Final = "exception"
ITEM_STATES: Final = (MATCHED, ACCEPTED, WAITING, EXCEPTION)

#: How a transfer we asked for ended, read from the provider's isTerminal and isSuccessful.
SETTLED: Final = "settled"
IN_FLIGHT: Final = "in_flight"
REFUSED: Final = "refused"
FAILED: Final = "failed"
TRANSFER_OUTCOMES: Final = (SETTLED, IN_FLIGHT, REFUSED, FAILED)


@dataclass(frozen=True, slots=True)
class ReportWindow:
    """What the report covers: [since, until), optionally one holding.

    `holding` is the holding as a person named it (an account number, part of an account name,
    or a holdingRef: `reconciliation.postings.holding_identity.find_holdings`); the report
    resolves it once, and `Report.scope` is the holding it found.
    """

    until: datetime
    since: datetime | None = None
    holding: str | None = None


@dataclass(slots=True)
class Tally:
    """A count and the sum of its amounts, in minor units of one currency."""

    count: int = 0
    amount_minor: int = 0


@dataclass(slots=True)
class HoldingTotals:
    """One holding and unit: what was posted, notified and transferred, and where items stand."""

    holding_ref: str
    currency: str
    posted_count: int = 0
    credits_minor: int = 0
    debits_minor: int = 0
    notified_count: int = 0
    notified_minor: int = 0
    transfers: dict[str, Tally] = field(
        default_factory=lambda: {outcome: Tally() for outcome in TRANSFER_OUTCOMES}
    )
    states: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ITEM_STATES, 0))

    @property
    def posted_minor(self) -> int:
        """Net movement: credits minus debits."""
        return self.credits_minor - self.debits_minor

    @property
    def transferred_count(self) -> int:
        return sum(t.count for t in self.transfers.values())

    @property
    def items(self) -> int:
        return sum(self.states.values())

    @property
    def exception_count(self) -> int:
        return self.states[EXCEPTION]

    @property
    def unmatched_count(self) -> int:
        """Unmatched is waiting plus exception, by definition (docs/reports.md)."""
        return self.states[WAITING] + self.states[EXCEPTION]


@dataclass(slots=True)
class FeeTotal:
    """Fees of settled transfers from one holding in one unit, of one kind and bearer.

    `amount_minor` adds the fees recon could read; `unknown_count` counts the transfers whose
    fee it could not (their raw fee objects are on the transfers), never added as 0.
    """

    holding_ref: str
    currency: str
    kind: str
    bearer: str
    count: int = 0
    amount_minor: int = 0
    unknown_count: int = 0


@dataclass(frozen=True, slots=True)
class OpenItem:
    """One unmatched item (waiting or exception), for the list under the figures."""

    stream: str
    item_id: int
    reference: str
    holding_ref: str
    currency: str
    amount_minor: int
    since: datetime
    age_days: int
    state: str
    why: str
    #: Which way the money moves on its holding: `credit` (in), `debit` (out), or "" when the
    #: item does not say (a notification of a kind that names no side).
    side: str = ""


@dataclass(slots=True)
class Ageing:
    """Exceptions by ageing bucket and stream: counts and amounts (by currency)."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    amounts: dict[str, dict[str, int]] = field(default_factory=dict)

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
    #: Who owns it, and what they wrote (the acknowledgement's note): a team reading the list
    #: sees which alerts someone is already on.
    acknowledged_by: str | None = None
    note: str | None = None


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
    grace_seconds: int = 900
    finality_seconds: int = 3600
    totals: list[HoldingTotals] = field(default_factory=list)
    ageing: Ageing = field(default_factory=Ageing)
    open_items: list[OpenItem] = field(default_factory=list)
    alerts: list[AlertCount] = field(default_factory=list)
    open_alerts: list[OpenAlert] = field(default_factory=list)
    open_alert_count: int = 0
    drift: list[HoldingDrift] = field(default_factory=list)
    fees: list[FeeTotal] = field(default_factory=list)
    #: holdingRef -> how people name it, for every holding the report mentions.
    holdings: dict[str, HoldingIdentity] = field(default_factory=dict)
    #: The one holding the window names, resolved (None: every holding).
    scope: HoldingIdentity | None = None
    #: The newest finished ledger audit when the report was built (None: none has finished).
    #: Like "alerts open now", it says where the books stand now, whatever the window.
    last_audit: AuditSummary | None = None

    def audit_line(self) -> str:
        """`last audit: clean, 1,000 holdings, 1,000,000 postings`, or that none ran yet."""
        return self.last_audit.line() if self.last_audit is not None else NEVER

    def figures(self) -> dict[str, int]:
        """The headline numbers, for the top of every format; each is defined in the legend."""
        states = {s: sum(t.states[s] for t in self.totals) for s in ITEM_STATES}
        transfers = {o: sum(t.transfers[o].count for t in self.totals) for o in TRANSFER_OUTCOMES}
        return {
            "holdings": len({t.holding_ref for t in self.totals}),
            "items": sum(states.values()),
            "matched": states[MATCHED],
            "accepted": states[ACCEPTED],
            "unmatched": states[WAITING] + states[EXCEPTION],
            "waiting": states[WAITING],
            "exceptions": states[EXCEPTION],
            "transfersSettled": transfers[SETTLED],
            "transfersInFlight": transfers[IN_FLIGHT],
            "transfersRefused": transfers[REFUSED],
            "transfersFailed": transfers[FAILED],
            "openAlerts": self.open_alert_count,
            "alertsOpened": sum(a.opened for a in self.alerts),
            "alertsResolved": sum(a.resolved for a in self.alerts),
            "holdingsDrifting": sum(
                1 for d in self.drift if d.drift_minor and not d.explained_by_lag
            ),
        }

    def holding(self, holding_ref: str) -> HoldingIdentity:
        """The holding as people name it (its fallback when the report did not look it up)."""
        return self.holdings.get(holding_ref) or HoldingIdentity(ref=holding_ref)
