"""The catch-up bench's figures: the goals, the fewest requests possible, how a run is reported.

Kept apart from `catchup.py`, which holds the runs, and `catchup_services.py`, their plumbing.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from catchup_services import PAGE_SIZE
from sandbox_host import Summary

from sandbox.variants import ProviderVariant

#: The goals of issue #16 (see catchup.py's docstring): postings per second through the
#: in-process transport on PostgreSQL and on the store's write path alone, activity requests over
#: the minimum, and the worker's peak RSS whatever the backlog.
GOAL_INPROCESS_POSTGRES_RATE = 40_000.0
GOAL_WRITE_PATH_RATE = 60_000.0
GOAL_REQUESTS_RATIO = 1.01
GOAL_WORKER_PEAK_MB = 150.0


@dataclass
class Figures:
    """What one run measured."""

    name: str
    postings: int
    holdings: int
    activity_requests: int = 0
    minimum_requests: int = 0
    pages_with_entries: int = 0
    other_requests: dict[str, int] = field(default_factory=dict)
    exactly_once: bool = False
    seconds: float = 0.0
    worker_peak_mb: list[float] = field(default_factory=list)
    note: str = ""
    #: Postings per second this run is held to, if any.
    goal_rate: float | None = None

    @property
    def rate(self) -> float:
        return self.postings / self.seconds if self.seconds else 0.0

    def ratios(self) -> dict[str, float]:
        """Each goal this run is held to, as a ratio where under 1.0 meets it."""
        out: dict[str, float] = {}
        if self.goal_rate is not None:
            out["rate"] = self.goal_rate / self.rate if self.rate else math.inf
        if self.minimum_requests:
            out["requests"] = self.activity_requests / self.minimum_requests / GOAL_REQUESTS_RATIO
        if self.worker_peak_mb:
            out["worker_peak"] = max(self.worker_peak_mb) / GOAL_WORKER_PEAK_MB
        return out

    def lines(self) -> list[str]:
        ratio = self.activity_requests / self.minimum_requests if self.minimum_requests else 0
        rate = self.postings / self.seconds if self.seconds else 0
        out = [f"== {self.name}: {self.postings:,} postings over {self.holdings:,} holdings"]
        if self.minimum_requests:
            pages = self.pages_with_entries or 1
            out += [
                f"   activity requests   {self.activity_requests:,} for a minimum of "
                f"{self.minimum_requests:,} ({ratio:.4f} x; goal <= 1.01 x)",
                f"   per page w/ entries {self.activity_requests / pages:.4f} "
                f"(minimum {self.minimum_requests / pages:.4f}) over {pages:,} pages",
                f"   other requests      {self.other_requests}",
            ]
        out += [
            f"   stored exactly once {'yes' if self.exactly_once else 'NO'}",
            f"   catch-up            {self.seconds:.1f} s, {rate:,.0f} postings/s",
        ]
        if self.worker_peak_mb:
            peaks = ", ".join(f"{mb:.0f}" for mb in self.worker_peak_mb)
            out.append(f"   worker peak RSS     {peaks} MB (goal <= {GOAL_WORKER_PEAK_MB:.0f} MB)")
        ratios = self.ratios()
        if ratios:
            shown = ", ".join(f"{name} {value:.2f}" for name, value in ratios.items())
            out.append(f"   ratio to goal       {shown} (under 1.0 meets it)")
        if self.note:
            out.append(f"   note                {self.note}")
        return out


def effective_page_size(variant: ProviderVariant, asked: int = PAGE_SIZE) -> int:
    """Entries per full page: what recon asks, or the provider's cap when that is lower.

    Above a cap that refuses (400), recon settles on the cap (the refusal names it); above one
    that clamps, it is served the cap.
    """
    return min(asked, variant.page_cap)


def pages_with_entries(summary: Summary, variant: ProviderVariant) -> int:
    size = effective_page_size(variant)
    return sum(math.ceil(count / size) for count, _, _ in summary.values())


def minimum_requests(summary: Summary, variant: ProviderVariant) -> int:
    """The fewest requests any reader needs that knows the provider's cap but not the ledger.

    One per page with entries; one for an empty holding; and one more after a full last page
    when the provider puts a cursor on its last page too (nothing tells it from a full page
    with more behind it). A provider without a cursor on its last page says where it ends.
    """
    size = effective_page_size(variant)
    total = 0
    for count, _, _ in summary.values():
        pages = math.ceil(count / size)
        ambiguous = count == 0 or (count % size == 0 and variant.last_page_cursor == "last-entry")
        total += pages + (1 if ambiguous else 0)
    return total


def round_summary(results: list[Figures]) -> list[str]:
    """Per run name: postings/s and each ratio to its goal, as min / median / max."""
    by_name: dict[str, list[Figures]] = {}
    for figures in results:
        by_name.setdefault(figures.name, []).append(figures)
    lines = []
    for name, runs in by_name.items():
        parts = [f"rounds {len(runs)}", f"postings/s {_spread([r.rate for r in runs], '{:,.0f}')}"]
        for goal in runs[0].ratios():
            values = [r.ratios().get(goal, math.inf) for r in runs]
            parts.append(f"ratio to goal ({goal}) {_spread(values, '{:.2f}')}")
        lines.append(f"{name}: " + "; ".join(parts))
    return lines


def _spread(values: list[float], form: str) -> str:
    ordered = sorted(values)
    shown = (ordered[0], statistics.median(ordered), ordered[-1])
    return " / ".join(form.format(v) for v in shown)
