"""One holding's gateway ledger against its stored postings: tallies and divergences.

Tallies (count, net sum by balance effect, and an XOR of line refs: a checksum that ignores
order) are kept per holding and per UTC day, for the gateway's postings within the poller's
horizon and for the store's, so a report can point at the day where they part. Divergences
are per posting:

- `missing`: the gateway shows it, within the horizon, and the store lacks it (unless it is at
  or before the holding's pruned horizon: retention removed it, so it is counted as `pruned`
  and left out of both tallies);
- `unknown`: the store has it and the gateway does not show it (any more);
- `differs`: both have it and a compared field differs (each field listed, both values).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Final
from uuid import UUID

from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.ledger_audit.ledger import FIELDS, Horizon, Key, Line
from reconciliation.postings.holding_identity import HoldingIdentity

MISSING: Final = "audit_posting_missing"
UNKNOWN: Final = "audit_posting_unknown"
DIFFERS: Final = "audit_posting_differs"
#: Every alert kind the audit raises, and each one's severity: a stored posting the ledger does
#: not show makes every sum built on it wrong (critical); a posting the store lacks or holds
#: differently hides money from matching (high).
SEVERITY: Final = {MISSING: "high", UNKNOWN: "critical", DIFFERS: "high"}
KINDS: Final = tuple(SEVERITY)


@dataclass(slots=True)
class Tally:
    """Count, net amount (minor units, increases minus decreases), XOR of line refs."""

    count: int = 0
    net: int = 0
    checksum: int = 0

    def add(self, line_ref: UUID, line: Line) -> None:
        amount = int(line.values[5])
        self.count += 1
        self.net += -amount if line.values[3] == "decrease" else amount
        self.checksum ^= line_ref.int

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "net": str(self.net), "checksum": f"{self.checksum:032x}"}

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.count, self.net, self.checksum)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


@dataclass(frozen=True, slots=True)
class Divergence:
    """One posting on which the gateway and the store disagree."""

    kind: str
    holding_ref: UUID
    #: How people name the holding (the audit looks it up once per holding).
    holding: HoldingIdentity
    journal_ref: UUID
    line_ref: UUID
    posted_at: datetime
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.kind, self.holding_ref, self.journal_ref, self.line_ref)

    @property
    def subject(self) -> str:
        what = {
            MISSING: "the gateway shows a posting the store lacks",
            UNKNOWN: "the store holds a posting the gateway does not show",
            DIFFERS: f"stored posting differs from the gateway's in {', '.join(self.fields)}",
        }[self.kind]
        return f"{self.holding.phrase}: {what} (journal {self.journal_ref}, line {self.line_ref})"

    def evidence(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            **self.holding.as_evidence(),
            "journalRef": str(self.journal_ref),
            "lineRef": str(self.line_ref),
            "postedAt": self.posted_at.isoformat(),
        }
        if self.fields:
            found["fields"] = {
                name: {"store": _plain(s), "gateway": _plain(g)}
                for name, (s, g) in self.fields.items()
            }
        return found


@dataclass(slots=True)
class HoldingAudit:
    """What the audit of one holding found."""

    holding_ref: UUID
    #: How people name the holding.
    holding: HoldingIdentity
    gateway: Tally = field(default_factory=Tally)
    store: Tally = field(default_factory=Tally)
    days: dict[date, tuple[Tally, Tally]] = field(default_factory=dict)
    #: Postings the gateway showed beyond the poller's horizon (not polled yet: not compared).
    beyond_horizon: int = 0
    #: Postings the gateway showed that retention removed from the store (not compared).
    pruned: int = 0
    read: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    error: str | None = None

    def day(self, when: datetime) -> tuple[Tally, Tally]:
        return self.days.setdefault(when.date(), (Tally(), Tally()))

    def differing_days(self) -> list[dict[str, Any]]:
        """The days whose tallies differ, oldest first."""
        return [
            {"day": d.isoformat(), "gateway": g.as_dict(), "store": s.as_dict()}
            for d, (g, s) in sorted(self.days.items())
            if g.key != s.key
        ]


def compare_holding(
    holding_ref: UUID,
    holding: HoldingIdentity,
    stored: dict[Key, Line],
    gateway: Iterable[tuple[Key, Line]],
    horizon: Horizon,
) -> tuple[HoldingAudit, list[Divergence]]:
    """Compare the gateway's lines (streamed) with the stored ones (taken out of `stored`)."""
    audit = HoldingAudit(holding_ref, holding)
    for (_journal, line_ref), line in stored.items():
        audit.store.add(line_ref, line)
        audit.day(line.posted_at)[1].add(line_ref, line)
    found: list[Divergence] = []
    seen: set[Key] = set()
    for key, line in gateway:
        if key in seen:
            continue  # a page read twice (a walk's ties): one posting, counted once
        seen.add(key)
        audit.read += 1
        mine = stored.pop(key, None)
        if mine is None and horizon.pruned(line):
            audit.pruned += 1
            continue
        covered = horizon.covers(key[1], line)
        if covered or mine is not None:
            audit.gateway.add(key[1], line)
            audit.day(line.posted_at)[0].add(key[1], line)
        else:
            audit.beyond_horizon += 1
        if mine is None:
            if covered:
                found.append(Divergence(MISSING, holding_ref, holding, *key, line.posted_at))
            continue
        fields = {
            name: (ours, theirs)
            for name, ours, theirs in zip(FIELDS, mine.values, line.values, strict=True)
            if ours != theirs
        }
        if fields:
            found.append(Divergence(DIFFERS, holding_ref, holding, *key, line.posted_at, fields))
    for (journal, line_ref), line in stored.items():
        found.append(Divergence(UNKNOWN, holding_ref, holding, journal, line_ref, line.posted_at))
    for divergence in found:
        audit.counts[divergence.kind] += 1
    return audit, found
