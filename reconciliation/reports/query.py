"""The report query: every number of the reconciliation report, read set-wise from the store.

Definitions (docs/decisions.md, "Reconciler"):
- totals by holding and unit, for items whose time falls in [since, until): postings by their
  holding (credits and debits), money notifications by the holding they name, transfers by
  their source holding; matched counts items an active match row names (and denied transfers,
  which need no counterpart), unmatched the rest, across all three streams.
- open exceptions at `until`: items a person must look at: 'exception' items, and items still
  waiting in the match backlog after the notification grace (transfers only once terminal: one
  in flight is not late). Aged from the item's own time, in the buckets 0-1, 2-7, 8-30 and
  over 30 days.
- alerts opened and resolved in the window, by kind and severity; alerts open now.
- balance drift per holding: the latest balance check up to `until`, and the checks over the
  window for the holdings that drifted.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from reconciliation.reports.exceptions import open_exceptions
from reconciliation.reports.history import alert_counts, balance_drift
from reconciliation.reports.model import Report, ReportWindow
from reconciliation.reports.totals import holding_totals
from reconciliation.store.models import Holding
from reconciliation.store.types import utcnow

holdings: Table = Holding.__table__  # type: ignore[assignment]


class ReportError(ValueError):
    """The report cannot be built as asked; the message says what to change."""


def build_report(
    session: Session,
    window: ReportWindow,
    *,
    grace_seconds: int = 900,
    now: datetime | None = None,
) -> Report:
    """Read the whole report for `window` in one session."""
    if window.since is not None and window.since >= window.until:
        raise ReportError(
            f"--since ({window.since.isoformat()}) must be before --until ({window.until.isoformat()})"
        )
    holding_id = _holding_id(session, window.holding_ref)
    report = Report(window=window, generated_at=now or utcnow())
    report.totals = holding_totals(session, window, holding_id)
    report.ageing = open_exceptions(session, window, holding_id, grace_seconds)
    report.alerts, report.open_alerts = alert_counts(session, window)
    report.drift = balance_drift(session, window, holding_id)
    return report


def _holding_id(session: Session, holding_ref: str | None) -> int | None:
    if holding_ref is None:
        return None
    try:
        ref = uuid.UUID(holding_ref)
    except ValueError:
        raise ReportError(f"--holding {holding_ref!r} is not a holdingRef (a UUID)") from None
    found = session.execute(select(holdings.c.id).where(holdings.c.holding_ref == ref)).scalar()
    if found is None:
        raise ReportError(
            f"no holding {holding_ref} is known to recon (see `recon report` without --holding)"
        )
    return int(found)
