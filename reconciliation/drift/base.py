"""What every drift rule sees, and what it must give back.

A rule reads the store and returns an `Assessment` (reconciliation.alerts.changes): the conditions
it sees now, for the alert kinds it owns. It writes nothing itself except its own bookkeeping
(balance checks, baselines), so a dry run can run every rule and throw the writes away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.alerts.changes import Assessment
from reconciliation.alerts.lifecycle import ACTIVE_STATES, Finding, fingerprint
from reconciliation.matching.outcome import Ambiguity, MatchTally
from reconciliation.policy import ReconcilePolicy
from reconciliation.store.models import Alert


@dataclass(frozen=True, slots=True)
class DriftContext:
    """One pass's view for the drift rules.

    session: the pass's unit of work (rolled back in a dry run).
    factory: for a rule that needs its own consistent read (balances).
    previous_pass_at: when the last committed pass ran; None on the first.
    matches_checked / matches_top: match rows in (checked, top] were written before this pass
        and never checked by a drift phase (a manual match, or a pass stopped half-way): rules
        about matched pairs read them in full. Normally the range is empty or tiny.
    matched: what this pass's matching did: ambiguities it refused to guess, and the pairs it
        matched whose stories it flagged as disagreeing (rules about pairs read only those).
    deliveries_checked / deliveries_top: inbox rows in (checked, top] are new since last pass.
    """

    session: Session
    factory: sessionmaker[Session]
    policy: ReconcilePolicy
    now: datetime
    previous_pass_at: datetime | None
    matches_checked: int
    matches_top: int
    deliveries_checked: int
    deliveries_top: int
    matched: MatchTally = field(default_factory=MatchTally)

    @property
    def ambiguities(self) -> list[Ambiguity]:
        return self.matched.ambiguities

    def ago(self, seconds: int) -> datetime:
        return self.now - timedelta(seconds=seconds)


class DriftRule(Protocol):
    """One family of drift: the kinds of alert it owns and how it sees them."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The alert kinds this rule owns."""

    def assess(self, ctx: DriftContext) -> Assessment: ...


class OneKindRule:
    """A rule that owns one alert kind at one severity and sees its whole condition each pass:
    `find` lists what it sees now (`class R(OneKindRule, kind=..., severity=...)`)."""

    kinds: ClassVar[tuple[str, ...]]
    severity: ClassVar[str]

    def __init_subclass__(cls, *, kind: str, severity: str) -> None:
        cls.kinds, cls.severity = (kind,), severity

    def assess(self, ctx: DriftContext) -> Assessment:
        return Assessment(kinds=self.kinds, findings=self.find(ctx))

    def find(self, ctx: DriftContext) -> list[Finding]:
        raise NotImplementedError

    def finding(self, subject: str, key: tuple[object, ...], evidence: dict[str, Any]) -> Finding:
        """One condition, fingerprinted by the kind and the natural keys of what it is about."""
        kind = self.kinds[0]
        return Finding(kind, self.severity, subject, fingerprint(kind, *key), evidence)


def named_by_active_alerts(session: Session, kinds: tuple[str, ...], *items: str) -> list[set[int]]:
    """For each item kind ('notification', 'transfer'), the row ids that the active alerts of
    these kinds name in their evidence: a rule reads them again to see whether they cleared."""
    named: list[set[int]] = [set() for _ in items]
    query = select(Alert.evidence).where(Alert.kind.in_(kinds), Alert.state.in_(ACTIVE_STATES))
    for evidence in session.scalars(query):
        for ids, item in zip(named, items, strict=True):
            item_id = ((evidence or {}).get(item) or {}).get(f"{item}Id")
            if isinstance(item_id, int):
                ids.add(item_id)
    return named
