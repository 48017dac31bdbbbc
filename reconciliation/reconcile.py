"""A reconciliation pass: matching, then drift rules, then alerts (cap, auto-resolve), then sinks.

`run_pass` is the one entry point: a worker's scheduled tick calls it, and so does
`recon reconcile`. It knows nothing of HTTP or Dramatiq and reads no environment: the caller
hands it a session factory and settings (or a ReconcilePolicy).

Units of work: each matching batch commits on its own; the drift rules, the alert changes and
the watermarks commit together at the end. A dry run does the same work inside one transaction
and rolls it back, so it reports exactly what a real pass would do and writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import structlog
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from foundation import Settings
from reconciliation.alerts.changes import AlertOutcome, apply_assessments
from reconciliation.alerts.lifecycle import log_change
from reconciliation.alerts.sinks import PublishResult, publish_alert_changes
from reconciliation.drift import RULES, DriftContext
from reconciliation.matching import MatchTally, match_all
from reconciliation.matching.sql import tune_every_transaction
from reconciliation.matching.status import max_match_id
from reconciliation.pass_lease import acquire, lease_owner, release
from reconciliation.policy import ReconcilePolicy
from reconciliation.progress import Progress, SilentProgress
from reconciliation.store import watermarks
from reconciliation.store.models import Delivery, Match, Watermark
from reconciliation.store.types import utcnow

#: Watermark names of the pass.
LAST_PASS_AT: Final = "reconcile.last_pass_at_ms"
DELIVERIES_CHECKED: Final = "reconcile.deliveries_checked"
#: How long the last pass took, in milliseconds (the operator console's overview shows it).
LAST_PASS_MILLIS: Final = "reconcile.last_pass_duration_ms"

#: Match rows shown as a sample of what a pass (or a dry run) matched.
SAMPLE_ROWS: Final = 20

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class PassResult:
    """What one pass did, or (dry run) would do."""

    dry_run: bool
    now: datetime
    skipped: bool = False
    matched: MatchTally = field(default_factory=MatchTally)
    alerts: AlertOutcome = field(default_factory=AlertOutcome)
    sample: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    #: The matching phase step by step (frontier, receipts, failures, accounts, settle, ...).
    matching_seconds: dict[str, float] = field(default_factory=dict)
    published: PublishResult | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe summary for the CLI and logs."""
        return {
            "dryRun": self.dry_run,
            "skipped": self.skipped,
            "now": self.now.isoformat(),
            "matchedByRule": dict(sorted(self.matched.rows_by_rule.items())),
            "transfersAttached": self.matched.attached,
            "ambiguities": len(self.matched.ambiguities),
            "alertsOpened": [c.fingerprint for c in self.alerts.opened],
            "alertsReopened": [c.fingerprint for c in self.alerts.reopened],
            "alertsResolved": [c.fingerprint for c in self.alerts.resolved],
            "alertsRefreshed": self.alerts.refreshed,
            "alertsHeldBack": self.alerts.suppressed,
            "sample": self.sample,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "matchingSeconds": {k: round(v, 3) for k, v in self.matching_seconds.items()},
        }


def run_pass(
    session_factory: sessionmaker[Session],
    settings_like: Settings | ReconcilePolicy,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    progress: Progress | None = None,
    publish: bool = True,
    ceiling: Mapping[str, int] | None = None,
) -> PassResult:
    """Run one pass; skip (result.skipped) when another pass holds the lease.

    `ceiling`: per matching stream, the highest id to read (a rebuild's pass on its scratch
    copy goes as far as the live store's last pass went; `matching.frontier`)."""
    policy = ReconcilePolicy.from_settings(settings_like)
    now = now or utcnow()
    progress = progress or SilentProgress()
    result = PassResult(dry_run=dry_run, now=now)
    owner = lease_owner()
    if not dry_run and not acquire(session_factory, owner, now):
        log.info("reconcile.skipped", reason="another pass holds the lease")
        result.skipped = True
        return result
    try:
        _run(session_factory, policy, result, progress, ceiling)
    finally:
        if not dry_run:
            release(session_factory, owner)
    if not dry_run:
        for event, change in result.alerts.changes:
            log_change(event, change)
        if publish:
            started = time.perf_counter()
            result.published = publish_alert_changes(
                session_factory, policy.alert_webhook_url, policy.alert_webhook_secret
            )
            result.seconds["publish"] = time.perf_counter() - started
    log.info("reconcile.pass", **result.as_dict() | {"sample": len(result.sample)})
    return result


def _run(
    factory: sessionmaker[Session],
    policy: ReconcilePolicy,
    result: PassResult,
    progress: Progress,
    ceiling: Mapping[str, int] | None = None,
) -> None:
    now = result.now
    with factory() as session:
        tune_every_transaction(session)
        checkpoint: Callable[[], None] = session.flush if result.dry_run else session.commit
        # Every watermark in one read (a handful of rows): the pass's reads and writes of them
        # then find them in the session instead of one round trip each. Held in session.info:
        # the identity map keeps an unchanged object only while something else refers to it.
        session.info["watermarks"] = session.scalars(select(Watermark)).all()
        last_pass = watermarks.read(session, LAST_PASS_AT, 0)
        floor = max_match_id(session)
        started = clock = time.perf_counter()
        result.matched = match_all(
            session,
            window_seconds=policy.match_window_seconds,
            now=now,
            checkpoint=checkpoint,
            progress=progress,
            seconds=result.matching_seconds,
            ceiling=ceiling,
        )
        result.seconds["matching"] = time.perf_counter() - clock

        clock = time.perf_counter()
        ctx = DriftContext(
            session=session,
            factory=factory,
            policy=policy,
            now=now,
            previous_pass_at=watermarks.from_millis(last_pass) if last_pass else None,
            matches_checked=watermarks.read(session, watermarks.MATCHES_CHECKED, 0),
            matches_top=floor,
            deliveries_checked=watermarks.read(session, DELIVERIES_CHECKED, 0),
            deliveries_top=int(
                session.execute(select(func.coalesce(func.max(Delivery.id), 0))).scalar_one()
            ),
            matched=result.matched,
        )
        progress.phase("drift rules", len(RULES))
        assessments = []
        for rule in RULES:
            rule_clock = time.perf_counter()
            assessments.append(rule.assess(ctx))
            result.seconds[f"drift.{rule.kinds[0]}"] = time.perf_counter() - rule_clock
            progress.advance(1)
        progress.done()
        result.seconds["drift"] = time.perf_counter() - clock

        clock = time.perf_counter()
        result.alerts = apply_assessments(
            session,
            assessments,
            now=now,
            cap=policy.alert_cap_per_pass,
            previous_pass_at=ctx.previous_pass_at,
        )
        result.sample = _sample(session, floor)
        watermarks.write(session, LAST_PASS_AT, watermarks.to_millis(now), now)
        watermarks.write(session, watermarks.MATCHES_CHECKED, max_match_id(session), now)
        watermarks.write(session, DELIVERIES_CHECKED, ctx.deliveries_top, now)
        elapsed_ms = int((time.perf_counter() - started) * 1000)
        watermarks.write(session, LAST_PASS_MILLIS, elapsed_ms, now)
        if result.dry_run:
            session.rollback()
        else:
            session.commit()
        result.seconds["alerts"] = time.perf_counter() - clock


def _sample(session: Session, floor: int) -> list[dict[str, Any]]:
    """The first rows this pass matched, to show what it did."""
    rows = session.execute(
        select(Match.id, Match.rule, Match.posting_id, Match.transfer_id, Match.notification_id)
        .where(Match.id > floor)
        .order_by(Match.id)
        .limit(SAMPLE_ROWS)
    )
    return [
        {"match": r[0], "rule": r[1], "posting": r[2], "transfer": r[3], "notification": r[4]}
        for r in rows
    ]
