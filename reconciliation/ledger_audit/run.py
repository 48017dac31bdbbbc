"""`audit_ledger`: every holding (or one), gateway against store, alerts and an `audit_runs` row.

Requests go through the gateway client the caller hands in; the workers and `recon audit` hand
in the one built on the shared rate limiter (`workers.gateway_rate_limit`), so an audit reads
at the deployment's gateway rate together with the pollers, never above it.

Alerts: one per divergence (`compare.KINDS`), deduplicated by fingerprint through
`reconciliation.alerts.lifecycle.raise_alert` (seen again: refreshed; back after being resolved:
reopened). An audit that read every holding it covers resolves the audit alerts in its scope
that it no longer sees. At most `ALERT_CAP` alerts are raised per audit (a provider that lost a
whole ledger must not bury the on-call under a million alerts); past the cap the divergences
are still counted and listed, and nothing is resolved, since an alert not raised again might
still hold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Final
from uuid import UUID

import structlog
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.alerts.lifecycle import ACTIVE_STATES, AUTO_RESOLVER, raise_alert, resolve_alert
from reconciliation.ledger_audit.compare import (
    KINDS,
    SEVERITY,
    Divergence,
    HoldingAudit,
    compare_holding,
)
from reconciliation.ledger_audit.ledger import Fetch, gateway_lines, read_horizon, stored_lines
from reconciliation.postings.activity_statements import READ_TERMS
from reconciliation.postings.holding_identity import holding_identity
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, AuditRun, Holding
from reconciliation.store.types import utcnow
from upstream import ActivityCursor as WireCursor
from upstream import ActivityPage, GatewayClient, HoldingAddress, PagingTerms, ProviderError

#: Most alerts one audit raises (see the module docstring).
ALERT_CAP: Final = 1_000
#: Divergences listed in a result (all are counted).
SHOWN: Final = 50
#: The page size asked for when the pollers have learned no smaller one (the reader's bound).
DEFAULT_PAGE_SIZE: Final = 200

RUNNING: Final = "running"
CLEAN: Final = "clean"
DIVERGED: Final = "diverged"
FAILED: Final = "failed"
#: Ended early because its process was stopping: no verdict, and an audit is still due.
STOPPED: Final = "stopped"

log = structlog.get_logger(__name__)

#: `fetch_for(address)`: the activity request for one holding (the gateway client's).
FetchFor = Callable[[HoldingAddress], Fetch]


def fetch_from(gateway: GatewayClient) -> FetchFor:
    """Activity requests through this client (the caller's, with its rate limit)."""

    def fetch_for(address: HoldingAddress) -> Fetch:
        def fetch(cursor: WireCursor | None, size: int, direction: str) -> ActivityPage:
            return gateway.activity_page(address, cursor, page_size=size, sort_direction=direction)

        return fetch

    return fetch_for


def due(session: Session, interval_seconds: float, now: datetime) -> bool:
    """Whether a scheduled audit should run: holdings are known, and no whole-store audit of
    at least one holding finished within 90% of the interval. A tick sent twice, or at every
    scheduler start, then costs no gateway request; and a start before any holding is
    discovered audits nothing (it would prove nothing: the first audit follows the first reads
    of the holdings discovery stored, `first_audit`)."""
    if session.scalar(select(Holding.id).where(Holding.watched.is_(True)).limit(1)) is None:
        return False
    latest = session.scalar(
        select(AuditRun.finished_at)
        .where(
            AuditRun.finished_at.is_not(None),
            AuditRun.holding_ref.is_(None),
            AuditRun.since.is_(None),
            AuditRun.holdings > 0,
            AuditRun.status != STOPPED,
        )
        .order_by(AuditRun.finished_at.desc())
        .limit(1)
    )
    return latest is None or (now - latest).total_seconds() >= 0.9 * interval_seconds


class AuditStoppedError(Exception):
    """The audit ended early because its process is stopping; it has no verdict."""


class AuditScopeError(Exception):
    """The audit was asked about something the store does not know; the message says what."""


@dataclass(slots=True)
class AuditResult:
    """What one audit found."""

    run_id: int
    started_at: datetime
    finished_at: datetime | None = None
    status: str = RUNNING
    holdings: list[HoldingAudit] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    postings: int = 0
    digest: str = ""
    alerts_raised: int = 0
    alerts_resolved: int = 0

    @property
    def total_divergences(self) -> int:
        return sum(self.counts.values())

    @property
    def days(self) -> tuple[date, date] | None:
        """The first and last UTC day of the postings compared (None: none were)."""
        every = [day for h in self.holdings for day in h.days]
        return (min(every), max(every)) if every else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe: totals, the holdings that differ, the first divergences."""
        return {
            "run": self.run_id,
            "status": self.status,
            "startedAt": self.started_at.isoformat(),
            "finishedAt": self.finished_at.isoformat() if self.finished_at else None,
            "holdings": len(self.holdings),
            "postings": self.postings,
            "firstDay": self.days[0].isoformat() if self.days else None,
            "lastDay": self.days[1].isoformat() if self.days else None,
            "divergences": self.total_divergences,
            "byKind": self.counts,
            "digest": self.digest,
            "alertsRaised": self.alerts_raised,
            "alertsResolved": self.alerts_resolved,
            "holdingsDiffering": [
                {
                    **h.holding.as_evidence(),
                    "holding": h.holding.label,
                    "gateway": h.gateway.as_dict(),
                    "store": h.store.as_dict(),
                    "beyondHorizon": h.beyond_horizon,
                    "pruned": h.pruned,
                    "days": h.differing_days(),
                    "error": h.error,
                }
                for h in self.holdings
                if h.error or h.gateway.key != h.store.key or any(h.counts.values())
            ],
            "sample": [
                {"kind": d.kind, "subject": d.subject, **d.evidence()}
                for d in self.divergences[:SHOWN]
            ],
        }


def paging_terms(session: Session, page_size: int) -> PagingTerms:
    """What the pollers learned of the provider's paging (read only): size, cap, direction."""
    found = session.execute(READ_TERMS).one()
    size = min(page_size, found.page_size) if found.page_size else page_size
    oldest_first = False if found.refused else (True if found.served else None)
    return PagingTerms(
        page_size=size, largest_served=found.largest_page or 0, oldest_first=oldest_first
    )


def _holdings(session: Session, holding_ref: UUID | None) -> list[tuple[int, HoldingAddress]]:
    refs = select(Holding.account_ref, Holding.endpoint_ref, Holding.holding_ref, Holding.id)
    scope = Holding.watched.is_(True) if holding_ref is None else Holding.holding_ref == holding_ref
    found = [
        (holding_id, HoldingAddress(account_ref=account, endpoint_ref=endpoint, holding_ref=ref))
        for account, endpoint, ref, holding_id in session.execute(
            refs.where(scope).order_by(Holding.id)
        )
    ]
    if holding_ref is not None and not found:
        raise AuditScopeError(
            f"no holding {holding_ref} in the store: list them with `recon report`"
        )
    return found


def audit_ledger(
    factory: sessionmaker[Session],
    fetch_for: FetchFor,
    *,
    holding_ref: UUID | None = None,
    since: datetime | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    clock: Callable[[], datetime] = utcnow,
    stop: Callable[[], bool] = lambda: False,
) -> AuditResult:
    """Audit every watched holding (or one), record the run, raise and resolve its alerts.

    `stop` is asked before each holding: True ends the audit there (AuditStoppedError, the run
    recorded as stopped), so a worker asked to stop does not hold its shutdown for the hours a
    whole audit can take at the gateway's rate."""
    with transaction(factory) as session:
        scope = _holdings(session, holding_ref)
        terms = paging_terms(session, page_size)
        run = AuditRun(started_at=clock(), status=RUNNING, holding_ref=holding_ref, since=since)
        session.add(run)
        session.flush()
        result = AuditResult(run_id=run.id, started_at=run.started_at)
    checksums: list[str] = []
    seen: set[str] = set()
    try:
        for holding_id, address in scope:
            if stop():
                raise AuditStoppedError(
                    f"stopped after {len(result.holdings)} of {len(scope)} holdings: the "
                    "process is shutting down"
                )
            audit, found = _audit_one(factory, holding_id, address, fetch_for, terms, since)
            result.holdings.append(audit)
            result.postings += audit.read
            checksums.append(
                f"{address.holding_ref}:{audit.gateway.count}:{audit.gateway.net}:{audit.gateway.checksum:x}"
            )
            for divergence in found:
                result.counts[divergence.kind] += 1
                if len(result.divergences) < SHOWN:
                    result.divergences.append(divergence)
            _alert(factory, found, result, seen, clock())
        failed = [h for h in result.holdings if h.error]
        if not failed and result.alerts_raised < ALERT_CAP:
            result.alerts_resolved = _resolve_cleared(factory, seen, holding_ref, since)
        result.status = FAILED if failed else (DIVERGED if result.total_divergences else CLEAN)
    except BaseException as exc:
        result.status = STOPPED if isinstance(exc, AuditStoppedError) else FAILED
        _finish(factory, result, clock(), checksums, error=f"{type(exc).__name__}: {exc}")
        raise
    _finish(factory, result, clock(), checksums)
    log.info(
        "audit.done",
        **{k: v for k, v in result.as_dict().items() if k not in ("sample", "holdingsDiffering")},
    )
    return result


def _audit_one(
    factory: sessionmaker[Session],
    holding_id: int,
    address: HoldingAddress,
    fetch_for: FetchFor,
    terms: PagingTerms,
    since: datetime | None,
) -> tuple[HoldingAudit, list[Divergence]]:
    with factory() as session:
        horizon = read_horizon(session, holding_id)
        stored = dict(stored_lines(session, holding_id, since))
        named = holding_identity(session, address.holding_ref)
    try:
        lines = gateway_lines(fetch_for(address), terms, since)
        return compare_holding(address.holding_ref, named, stored, lines, horizon)
    except ProviderError as exc:
        audit = HoldingAudit(address.holding_ref, named, error=f"{type(exc).__name__}: {exc}")
        log.warning(
            "audit.holding_unreadable", holding_ref=str(address.holding_ref), error=audit.error
        )
        return audit, []


def _alert(
    factory: sessionmaker[Session],
    found: list[Divergence],
    result: AuditResult,
    seen: set[str],
    now: datetime,
) -> None:
    room = ALERT_CAP - result.alerts_raised
    if not found or room <= 0:
        return
    with transaction(factory) as session:
        for divergence in found[:room]:
            raise_alert(
                session,
                kind=divergence.kind,
                severity=SEVERITY[divergence.kind],
                subject=divergence.subject,
                fingerprint=divergence.fingerprint,
                evidence=divergence.evidence(),
                now=now,
            )
            seen.add(divergence.fingerprint)
    result.alerts_raised += min(room, len(found))


def _resolve_cleared(
    factory: sessionmaker[Session], seen: set[str], holding_ref: UUID | None, since: datetime | None
) -> int:
    """Resolve the active audit alerts in this audit's scope that it did not see again."""
    resolved = 0
    with transaction(factory) as session:
        active = session.scalars(
            select(Alert).where(Alert.kind.in_(KINDS), Alert.state.in_(ACTIVE_STATES))
        ).all()
        for alert in active:
            if alert.fingerprint in seen:
                continue
            evidence = alert.evidence or {}
            if holding_ref is not None and evidence.get("holdingRef") != str(holding_ref):
                continue
            posted = evidence.get("postedAt")
            if since is not None and (posted is None or datetime.fromisoformat(posted) < since):
                continue
            resolve_alert(
                session,
                alert.id,
                by=AUTO_RESOLVER,
                note="a later audit found the store and the gateway agree on this posting",
            )
            resolved += 1
    return resolved


def _finish(
    factory: sessionmaker[Session],
    result: AuditResult,
    now: datetime,
    checksums: list[str],
    error: str | None = None,
) -> None:
    result.finished_at = now
    result.digest = hashlib.sha256("\n".join(sorted(checksums)).encode()).hexdigest()[:16]
    unreadable = [f"{h.holding_ref}: {h.error}" for h in result.holdings if h.error]
    with transaction(factory) as session:
        run = session.get(AuditRun, result.run_id)
        assert run is not None
        run.finished_at = now
        run.status = result.status
        run.holdings = len(result.holdings)
        run.postings = result.postings
        run.divergences = result.total_divergences
        run.missing = result.counts[KINDS[0]]
        run.unknown = result.counts[KINDS[1]]
        run.differing = result.counts[KINDS[2]]
        run.digest = result.digest
        run.first_day, run.last_day = result.days or (None, None)
        run.error = error or ("; ".join(unreadable)[:2000] if unreadable else None)
