"""One prune run: every kind of record, in turn, each in small committed batches.

`run_retention` is the one entry point: the scheduled `prune` job calls it, and so does
`recon prune`. It knows nothing of Dramatiq or the command line; the caller hands it a session
factory, the retention settings and the matching window.

Every age is measured back from `now` and is never shorter than the matching window: nothing a
pass may still match is ever removed, whatever the settings say. What the evidence of an alert
not yet resolved names is read once, before the first batch, and kept (protection.py); the
reconciled facts read it again under the pass lease, batch by batch (reconciled.py).

Two ages are aligned so that one kind's removal never outruns another's guarantee: a
notification's cutoff is never later than its delivery's (the inbox row deduplicates retries,
invariant 2, and goes first), and a transfer's never later than its Idempotency-Key record's
(the key's record goes first, then the intent that names the transfer goes with it).

After the batches, every PostgreSQL table that lost rows is vacuumed (vacuum.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from sqlalchemy.orm import Session, sessionmaker

# The siblings as modules, named by their own paths: `from reconciliation.retention import
# ...` would go through the package's __init__, which imports this module (a circle).
import reconciliation.retention.alert_history as alert_history  # noqa: PLR0402 - see above
import reconciliation.retention.deliveries as deliveries  # noqa: PLR0402 - see above
import reconciliation.retention.matchless as matchless  # noqa: PLR0402 - see above
import reconciliation.retention.outbound as outbound  # noqa: PLR0402 - see above
import reconciliation.retention.reconciled as reconciled  # noqa: PLR0402 - see above
import reconciliation.retention.snapshots as snapshots  # noqa: PLR0402 - see above
import reconciliation.retention.transfer_history as transfer_history  # noqa: PLR0402 - see above
from foundation import RetentionSettings
from reconciliation.pass_lease import acquire, lease_owner, release
from reconciliation.retention.archive import Archive
from reconciliation.retention.batches import BATCH_ROWS, BatchReport, PassHold, PruneContext
from reconciliation.retention.members import FactCutoffs
from reconciliation.retention.protection import open_alert_refs
from reconciliation.retention.vacuum import REWRITTEN, vacuum_tables
from reconciliation.store.types import utcnow

#: Record kinds of the reconciled facts, as the cutoffs are reported.
POSTINGS: Final = "postings"
TRANSFERS: Final = "transfers"
NOTIFICATIONS: Final = "notifications"
MATCHES: Final = reconciled.KIND

#: How long a batch of reconciled facts waits for a running pass to hand back the lease: a
#: steady pass takes seconds, a catch-up over millions of rows about a minute.
PASS_WAIT_SECONDS: Final = 120.0
#: How often it asks again meanwhile.
PASS_POLL_SECONDS: Final = 0.25
#: Longest pause after a batch before the next takes the lease again (see `pass_hold`).
PASS_GAP_SECONDS: Final = 1.0


def pass_hold(factory: sessionmaker[Session]) -> PassHold:
    """Hold the pass lease around one batch, waiting a while for a running pass to finish."""

    @contextmanager
    def hold() -> Iterator[bool]:
        owner = lease_owner()
        deadline = time.monotonic() + PASS_WAIT_SECONDS
        while not acquire(factory, owner, utcnow()):
            if time.monotonic() > deadline:
                yield False
                return
            time.sleep(PASS_POLL_SECONDS)
        held_from = time.monotonic()
        try:
            yield True
        finally:
            release(factory, owner)
            # A pass that starts while a batch holds the lease skips its tick: leaving the lease
            # free as long as the batch held it keeps a long prune from starving the passes.
            time.sleep(min(time.monotonic() - held_from, PASS_GAP_SECONDS))

    return hold


@dataclass(slots=True)
class PruneResult:
    """What one run removed (dry run: would remove), per table, and where it archived it."""

    dry_run: bool
    now: datetime
    cutoffs: dict[str, datetime] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    archived: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    #: Tables vacuumed after the batches (PostgreSQL), and how long that took.
    vacuumed: list[str] = field(default_factory=list)
    vacuum_seconds: float = 0.0
    #: True when a running pass held the lease too long: the reconciled facts wait for the
    #: next run (nothing else is affected).
    deferred: bool = False

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe summary for the CLI and logs."""
        return {
            "dryRun": self.dry_run,
            "now": self.now.isoformat(),
            "cutoffs": {k: v.isoformat() for k, v in self.cutoffs.items()},
            "removed": dict(sorted(self.removed.items())),
            "archived": [str(p) for p in self.archived],
            "seconds": round(self.seconds, 3),
            "vacuumed": self.vacuumed,
            "vacuumSeconds": round(self.vacuum_seconds, 3),
            "deferred": self.deferred,
        }


def cutoffs(
    settings: RetentionSettings, match_window_seconds: int, now: datetime
) -> dict[str, datetime]:
    """Per kind of record: what was stored (or closed) before this moment may go."""
    window = timedelta(seconds=match_window_seconds)

    def back(days: float) -> datetime:
        return now - max(timedelta(days=days), window)

    found = {
        deliveries.KIND: back(settings.delivery_days),
        outbound.KIND: back(settings.outbound_request_days),
        snapshots.KIND: back(settings.snapshot_thin_days),
        transfer_history.KIND: back(settings.transfer_history_days),
    }
    if settings.resolved_alert_days is not None:
        found[alert_history.KIND] = back(settings.resolved_alert_days)
    if settings.posting_days is not None:
        found[POSTINGS] = back(settings.posting_days)
    if settings.transfer_days is not None:
        found[TRANSFERS] = min(back(settings.transfer_days), found[outbound.KIND])
    if settings.notification_days is not None:
        found[NOTIFICATIONS] = min(back(settings.notification_days), found[deliveries.KIND])
    if settings.match_days is not None:
        found[MATCHES] = back(settings.match_days)
    return found


def fact_cutoffs(found: dict[str, datetime]) -> FactCutoffs:
    """The reconciled facts' cutoffs out of every kind's (None where no limit is set)."""
    return FactCutoffs(
        delivery=found[deliveries.KIND],
        key=found[outbound.KIND],
        posting=found.get(POSTINGS),
        transfer=found.get(TRANSFERS),
        notification=found.get(NOTIFICATIONS),
        match=found.get(MATCHES),
    )


def run_retention(
    factory: sessionmaker[Session],
    settings: RetentionSettings,
    *,
    match_window_seconds: int,
    projection_grace_seconds: int,
    now: datetime | None = None,
    dry_run: bool = False,
    archive_dir: Path | None = None,
    batch_rows: int = BATCH_ROWS,
    on_batch: BatchReport | None = None,
    hold_pass: bool = False,
) -> PruneResult:
    """Prune every kind of record past its age; archive what goes first when asked to.

    `projection_grace_seconds` is the balance check's (the postings it still reads);
    `hold_pass` takes the pass lease (reconciliation.pass_lease) around each batch of reconciled
    facts, so no pass runs meanwhile; without it the caller promises that none does (tests).
    """
    now = now or utcnow()
    started = time.perf_counter()
    result = PruneResult(dry_run=dry_run, now=now)
    result.cutoffs = cutoffs(settings, match_window_seconds, now)
    archive = None
    if archive_dir is not None and not dry_run:
        archive = Archive(folder=archive_dir, run=now.strftime("%Y%m%dT%H%M%S%fZ"))
    with factory() as session:
        guard = open_alert_refs(session)
    ctx = PruneContext(
        factory=factory,
        now=now,
        dry_run=dry_run,
        archive=archive,
        guard=guard,
        batch_rows=batch_rows,
    )
    if on_batch is not None:
        ctx.on_batch = on_batch
    if hold_pass and not dry_run:
        ctx.hold_pass = pass_hold(factory)
    try:
        deliveries.prune_deliveries(ctx, result.cutoffs[deliveries.KIND])
        outbound.prune_outbound_requests(ctx, result.cutoffs[outbound.KIND])
        snapshots.thin_snapshots(ctx, result.cutoffs[snapshots.KIND])
        if POSTINGS in result.cutoffs:
            changes_cutoff = min(result.cutoffs[POSTINGS], result.cutoffs[snapshots.KIND])
            snapshots.thin_snapshots(ctx, changes_cutoff, keep_changes=False)
        transfer_history.compact_transfer_history(ctx, result.cutoffs[transfer_history.KIND])
        result.deferred = not _prune_reconciled(ctx, result.cutoffs, projection_grace_seconds)
        if alert_history.KIND in result.cutoffs:
            alert_history.prune_resolved_alerts(ctx, result.cutoffs[alert_history.KIND])
    finally:
        result.removed = dict(ctx.removed)
        result.archived = sorted(archive.files.values()) if archive is not None else []
        result.seconds = time.perf_counter() - started
    if not dry_run:
        report = vacuum_tables(factory, _touched(result.removed))
        result.vacuumed, result.vacuum_seconds = report.tables, report.seconds
    return result


def _prune_reconciled(ctx: PruneContext, found: dict[str, datetime], grace_seconds: int) -> bool:
    """Groups first, then what no match row names; False when a pass kept the lease too long."""
    limits = fact_cutoffs(found)
    return (
        reconciled.prune_match_groups(ctx, limits, grace_seconds)
        and matchless.prune_denied_transfers(ctx, limits)
        and matchless.prune_moneyless_notifications(ctx, limits)
    )


def _touched(removed: dict[str, int]) -> list[str]:
    """Tables that lost rows, those whose rows a prune rewrote (a delivery's notification loses
    its pointer), and the small ones every poll and pass rewrites: each holds dead versions."""
    touched = {table for table, rows in removed.items() if rows} | set(REWRITTEN)
    if deliveries.KIND in touched:
        touched.add(NOTIFICATIONS)
    return sorted(touched)
