"""The one line a report or the console overview says about the books: the last audit.

"last audit: clean, 1,000 holdings, 1,000,000 postings over 30 days (2026-10-01 to
2026-10-30); finished 2026-10-31 02:00:04 UTC" (or how many divergences, or that it failed, or
that none ran yet): the verdict and, beside it, what it covered and when. A verdict proves the
books only as they were when it ran, so the line always says when; and when holdings are
watched now that it did not read (discovered after it, or outside a one-holding audit) it says
"4 of 5 holdings" rather than letting "clean" stand for all of them. Reads the newest finished `audit_runs` row that audited at
least one holding: an audit of nothing (one run before any holding was known) proves nothing,
so until a holding has been audited the line says "none yet". Cheap enough for a page that is
rendered on every visit (one indexed row). The reconciliation report carries it in
every format (`reconciliation.reports`), and the console's overview shows it as a tile.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reconciliation.store.models import AuditRun, Holding


@dataclass(frozen=True, slots=True)
class AuditSummary:
    """The newest finished audit: when, its outcome, what it covered, what it found."""

    run_id: int
    finished_at: datetime
    status: str
    holdings: int
    postings: int
    divergences: int
    missing: int
    unknown: int
    differing: int
    digest: str | None
    partial: bool
    first_day: date | None = None
    last_day: date | None = None
    #: Holdings watched now: more than `holdings` means some were not read by this audit.
    watched_now: int = 0

    @property
    def outcome(self) -> str:
        """The short figure the console's tile shows: `clean`, `4 divergences`, `failed`."""
        if self.status == "diverged":
            return _many(self.divergences, "divergence")
        return "clean" if self.status == "clean" else "failed"

    @property
    def needs_a_person(self) -> bool:
        """Anything but a clean audit: the books and the store disagree, or nobody knows."""
        return self.status != "clean"

    @property
    def days(self) -> str:
        """The days its postings were posted on: `30 days (2026-10-01 to 2026-10-30)`, or ``."""
        if self.first_day is None or self.last_day is None:
            return ""
        count = (self.last_day - self.first_day).days + 1
        if count == 1:
            return f"1 day ({self.first_day.isoformat()})"
        return f"{count:,} days ({self.first_day.isoformat()} to {self.last_day.isoformat()})"

    @property
    def covered(self) -> str:
        """What the audit read: `1,000 holdings, 1,000,000 postings over 30 days (...)` (and
        whether all of the store)."""
        holdings = _many(self.holdings, "holding")
        if self.watched_now > self.holdings:
            holdings = f"{self.holdings:,} of {_many(self.watched_now, 'holding')}"
        covered = f"{holdings}, {_many(self.postings, 'posting')}"
        if self.days:
            covered += f" over {self.days}"
        return covered + " (part of the store)" if self.partial else covered

    @property
    def not_covered(self) -> int:
        """Holdings watched now that this audit did not read."""
        return max(0, self.watched_now - self.holdings)

    def line(self) -> str:
        """The sentence a report prints: verdict, coverage, and when it finished."""
        covered = self.covered
        when = f"finished {self.finished_at.strftime('%Y-%m-%d %H:%M:%S')} UTC"
        if self.not_covered:
            when += f"; {_many(self.not_covered, 'holding')} watched now not covered"
        if self.status == "clean":
            return f"last audit: clean, {covered}; {when}"
        if self.status == "diverged":
            return (
                f"last audit: {self.outcome} ({self.missing:,} missing, "
                f"{self.unknown:,} unknown, {self.differing:,} differing), {covered}; {when}"
            )
        return f"last audit: failed, {covered}; {when}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "finishedAt": self.finished_at.isoformat(),
            "status": self.status,
            "holdings": self.holdings,
            "postings": self.postings,
            "divergences": self.divergences,
            "missing": self.missing,
            "unknown": self.unknown,
            "differing": self.differing,
            "digest": self.digest,
            "partial": self.partial,
            "firstDay": self.first_day.isoformat() if self.first_day else None,
            "lastDay": self.last_day.isoformat() if self.last_day else None,
            "holdingsWatchedNow": self.watched_now,
            "holdingsNotCovered": self.not_covered,
            "line": self.line(),
        }


def _many(count: int, noun: str) -> str:
    """`1 holding`, `1,000 holdings`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


#: What a report prints when no audit of at least one holding has finished yet.
NEVER: str = "last audit: none yet (run `recon audit`)"


def last_audit(session: Session) -> AuditSummary | None:
    """The newest finished audit of at least one holding, or None when none has finished."""
    run = session.scalars(
        select(AuditRun)
        # A stopped audit (its worker was shutting down) has no verdict to quote.
        .where(
            AuditRun.finished_at.is_not(None), AuditRun.holdings > 0, AuditRun.status != "stopped"
        )
        .order_by(AuditRun.finished_at.desc(), AuditRun.id.desc())
        .limit(1)
    ).first()
    if run is None or run.finished_at is None:
        return None
    return AuditSummary(
        run_id=run.id,
        # Every other field the run stores under the same name, as it is.
        **{f.name: getattr(run, f.name) for f in fields(AuditSummary) if hasattr(AuditRun, f.name)},
        partial=run.holding_ref is not None or run.since is not None,
        # One small count (holdings, not postings): cheap enough for the overview's every visit.
        watched_now=session.scalar(
            select(func.count()).select_from(Holding).where(Holding.watched.is_(True))
        )
        or 0,
    )


def last_audit_line(session: Session) -> str:
    """`last_audit(session).line()`, or the sentence for no audit yet."""
    found = last_audit(session)
    return found.line() if found is not None else NEVER
