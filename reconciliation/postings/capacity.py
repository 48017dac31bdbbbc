"""Whether the gateway budget can hold the staleness ceiling for the holdings known.

A silent holding costs one activity read and (its endpoint) one balance read per ceiling, so
holding the ceiling needs (holdings + endpoints) / ceiling requests per second of the budget,
whatever else moves; signalled reads come on top and grow with the money, not with holdings
(docs/scale.md). When that exceeds RECON_GATEWAY_RPS the ceiling cannot be held: silent
holdings are read later than it says. `recon config check`, the discovery pass (so at start)
and the console's overview say so, with the figures that would hold it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reconciliation.store.models import Holding


@dataclass(frozen=True, slots=True)
class ReadBudget:
    """The gateway budget (RECON_GATEWAY_RPS) and the staleness ceiling it must hold."""

    requests_per_second: float
    ceiling_seconds: float


@dataclass(frozen=True, slots=True)
class CeilingShortfall:
    """A ceiling the budget cannot hold for this many holdings and endpoints."""

    holdings: int
    endpoints: int
    budget: ReadBudget

    @property
    def needed_per_second(self) -> float:
        """Requests per second that reading every silent holding once per ceiling takes."""
        return (self.holdings + self.endpoints) / self.budget.ceiling_seconds

    @property
    def ceiling_that_holds(self) -> int:
        """The shortest ceiling (whole seconds) the budget holds for these holdings."""
        return math.ceil((self.holdings + self.endpoints) / self.budget.requests_per_second)

    @property
    def budget_that_holds(self) -> int:
        """The smallest budget (whole requests per second) that holds this ceiling."""
        return math.ceil(self.needed_per_second)

    def sentence(self) -> str:
        """What is wrong and the figures that would fix it, for a person."""
        return (
            f"RECON_MAX_STALENESS_SECONDS={self.budget.ceiling_seconds:g} cannot be held: "
            f"{self.holdings:,} holdings on {self.endpoints:,} endpoints need "
            f"{self.needed_per_second:.1f} gateway requests/s to be read (activity and "
            f"balance) once per ceiling, more than RECON_GATEWAY_RPS="
            f"{self.budget.requests_per_second:g}; a ceiling of at least "
            f"{self.ceiling_that_holds:,} s, or a budget of at least {self.budget_that_holds:,} "
            "requests/s, would hold it (docs/scale.md)"
        )


def ceiling_shortfall(holdings: int, endpoints: int, budget: ReadBudget) -> CeilingShortfall | None:
    """The shortfall, or None when the budget holds the ceiling for these holdings."""
    found = CeilingShortfall(holdings, endpoints, budget)
    return found if found.needed_per_second > budget.requests_per_second else None


def watched_counts(session: Session) -> tuple[int, int]:
    """Watched holdings and the endpoints they are on (two index-only counts)."""
    watched = Holding.watched.is_(True)
    holdings = session.scalar(select(func.count()).select_from(Holding).where(watched))
    endpoints = session.scalar(
        select(func.count(func.distinct(Holding.endpoint_ref))).where(watched)
    )
    return int(holdings or 0), int(endpoints or 0)


def stored_ceiling_shortfall(session: Session, budget: ReadBudget) -> CeilingShortfall | None:
    """The shortfall for the holdings the store knows, or None."""
    return ceiling_shortfall(*watched_counts(session), budget)
