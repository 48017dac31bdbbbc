"""The report query: every number of the reconciliation report, read set-wise from the store.

What each number means is defined once: item states and transfer outcomes in
`reconciliation.reports.items`, their wording in `reconciliation.reports.legend`, and the
headline figures in `Report.figures` (docs/reports.md explains them for people). This module
only asks each part for its share, in one session:
- items in [since, until) by holding and unit, by state and (transfers) by outcome;
- exceptions by age, and the unmatched items one by one (oldest first);
- alerts opened and resolved in the window, by kind and severity; alerts open now;
- balance drift per holding: the latest balance check up to `until`, and the checks over the
  window for the holdings that drifted;
- fees of settled transfers per holding and unit, by kind and bearer
  (`reconciliation.reports.fees`);
- the last ledger audit (`reconciliation.ledger_audit.summary`): when the books were last
  re-read from the gateway, and what that found.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciliation.ledger_audit.summary import last_audit
from reconciliation.reports.fees import fee_figures
from reconciliation.reports.figures import holding_names, item_figures, open_items
from reconciliation.reports.history import alert_counts, balance_drift
from reconciliation.reports.items import FINALITY_SECONDS
from reconciliation.reports.model import Report, ReportWindow
from reconciliation.store.tables import holdings
from reconciliation.store.types import utcnow


class ReportError(ValueError):
    """The report cannot be built as asked; the message says what to change."""


def build_report(
    session: Session,
    window: ReportWindow,
    *,
    grace_seconds: int = 900,
    finality_seconds: int = FINALITY_SECONDS,
    now: datetime | None = None,
) -> Report:
    """Read the whole report for `window` in one session.

    `grace_seconds` is the notification grace the reconciliation passes use
    (RECON_NOTIFICATION_GRACE_SECONDS): an unmatched item younger than it is waiting, an older
    one is an exception. Pass the same value the passes run with, or the report and the
    alerts will disagree about when an item became late. `finality_seconds` likewise is the
    passes' finality deadline (RECON_FINALITY_DEADLINE_SECONDS): a transfer still in flight
    past it is late, an exception, exactly when `finality_overdue` says so.
    """
    if window.since is not None and window.since >= window.until:
        raise ReportError(
            f"--since ({window.since.isoformat()}) must be before --until ({window.until.isoformat()})"
        )
    holding_id = _holding_id(session, window.holding_ref)
    report = Report(
        window=window,
        generated_at=now or utcnow(),
        grace_seconds=grace_seconds,
        finality_seconds=finality_seconds,
    )
    report.totals, report.ageing = item_figures(
        session, window, holding_id, grace_seconds, finality_seconds
    )
    report.open_items = open_items(
        session, window, holding_id, grace_seconds, finality_seconds=finality_seconds
    )
    report.alerts, report.open_alerts, report.open_alert_count = alert_counts(session, window)
    report.drift = balance_drift(session, window, holding_id)
    report.fees = fee_figures(session, window, holding_id)
    refs = {t.holding_ref for t in report.totals} | {d.holding_ref for d in report.drift}
    refs |= {f.holding_ref for f in report.fees}
    report.names = holding_names(session, refs)
    report.last_audit = last_audit(session)
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
