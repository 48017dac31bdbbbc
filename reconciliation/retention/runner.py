"""One prune run: every kind of record, in turn, each in small committed batches.

`run_retention` is the one entry point: the scheduled `prune` job calls it, and so does
`recon prune`. It knows nothing of Dramatiq or the command line; the caller hands it a session
factory, the retention settings and the matching window.

Every age is measured back from `now` and is never shorter than the matching window: nothing a
pass may still match is ever removed, whatever the settings say. What the evidence of an alert
not yet resolved names is read once, before the first batch, and kept (protection.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from foundation.settings import RetentionSettings
from reconciliation.retention import (
    alert_history,
    deliveries,
    outbound,
    snapshots,
    transfer_history,
)
from reconciliation.retention.archive import Archive
from reconciliation.retention.batches import BATCH_ROWS, BatchReport, PruneContext
from reconciliation.retention.protection import open_alert_refs
from reconciliation.store.types import utcnow


@dataclass(slots=True)
class PruneResult:
    """What one run removed (dry run: would remove), per table, and where it archived it."""

    dry_run: bool
    now: datetime
    cutoffs: dict[str, datetime] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    archived: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe summary for the CLI and logs."""
        return {
            "dryRun": self.dry_run,
            "now": self.now.isoformat(),
            "cutoffs": {k: v.isoformat() for k, v in self.cutoffs.items()},
            "removed": dict(sorted(self.removed.items())),
            "archived": [str(p) for p in self.archived],
            "seconds": round(self.seconds, 3),
        }


def cutoffs(
    settings: RetentionSettings, match_window_seconds: int, now: datetime
) -> dict[str, datetime]:
    """Per kind of record: what was stored (or closed) before this moment may go."""
    window = timedelta(seconds=match_window_seconds)

    def back(days: int) -> datetime:
        return now - max(timedelta(days=days), window)

    found = {
        deliveries.KIND: back(settings.delivery_days),
        outbound.KIND: back(settings.outbound_request_days),
        snapshots.KIND: back(settings.snapshot_thin_days),
        transfer_history.KIND: back(settings.transfer_history_days),
    }
    if settings.resolved_alert_days is not None:
        found[alert_history.KIND] = back(settings.resolved_alert_days)
    return found


def run_retention(
    factory: sessionmaker[Session],
    settings: RetentionSettings,
    *,
    match_window_seconds: int,
    now: datetime | None = None,
    dry_run: bool = False,
    archive_dir: Path | None = None,
    batch_rows: int = BATCH_ROWS,
    on_batch: BatchReport | None = None,
) -> PruneResult:
    """Prune every kind of record past its age; archive what goes first when asked to."""
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
    try:
        deliveries.prune_deliveries(ctx, result.cutoffs[deliveries.KIND])
        outbound.prune_outbound_requests(ctx, result.cutoffs[outbound.KIND])
        snapshots.thin_snapshots(ctx, result.cutoffs[snapshots.KIND])
        transfer_history.compact_transfer_history(ctx, result.cutoffs[transfer_history.KIND])
        if alert_history.KIND in result.cutoffs:
            alert_history.prune_resolved_alerts(ctx, result.cutoffs[alert_history.KIND])
    finally:
        result.removed = dict(ctx.removed)
        result.archived = sorted(archive.files.values()) if archive is not None else []
        result.seconds = time.perf_counter() - started
    return result
