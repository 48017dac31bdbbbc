"""The report as plain data (JSON and CSV share it): exact integers, ISO times, camelCase."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reconciliation.reports.model import Report


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def report_as_dict(report: Report) -> dict[str, Any]:
    window = report.window
    return {
        "generatedAt": _when(report.generated_at),
        "window": {
            "since": _when(window.since),
            "until": _when(window.until),
            "holdingRef": window.holding_ref,
        },
        "summary": report.summary(),
        "totals": [
            {
                "holdingRef": t.holding_ref,
                "currency": t.currency,
                "postedCount": t.posted_count,
                "creditsMinor": t.credits_minor,
                "debitsMinor": t.debits_minor,
                "postedMinor": t.posted_minor,
                "notifiedCount": t.notified_count,
                "notifiedMinor": t.notified_minor,
                "transferredCount": t.transferred_count,
                "transferredMinor": t.transferred_minor,
                "matchedCount": t.matched_count,
                "unmatchedCount": t.unmatched_count,
            }
            for t in report.totals
        ],
        "openExceptions": {
            "total": report.ageing.total,
            "byBucket": report.ageing.counts,
            "amountsByBucket": report.ageing.amounts,
            "oldest": [
                {
                    "stream": e.stream,
                    "id": e.item_id,
                    "reference": e.reference,
                    "holdingRef": e.holding_ref,
                    "currency": e.currency,
                    "amountMinor": e.amount_minor,
                    "since": _when(e.since),
                    "ageDays": e.age_days,
                    "status": e.status,
                }
                for e in report.ageing.oldest
            ],
        },
        "alerts": {
            "byKind": [
                {"kind": a.kind, "severity": a.severity, "opened": a.opened, "resolved": a.resolved}
                for a in report.alerts
            ],
            "open": [
                {
                    "id": a.alert_id,
                    "kind": a.kind,
                    "severity": a.severity,
                    "state": a.state,
                    "subject": a.subject,
                    "openedAt": _when(a.opened_at),
                }
                for a in report.open_alerts
            ],
        },
        "balanceDrift": [
            {
                "holdingRef": d.holding_ref,
                "currency": d.currency,
                "observedAt": _when(d.observed_at),
                "settledMinor": d.settled_minor,
                "postedMinor": d.posted_minor,
                "driftMinor": d.drift_minor,
                "explainedByLag": d.explained_by_lag,
                "series": [
                    {
                        "observedAt": _when(p.observed_at),
                        "driftMinor": p.drift_minor,
                        "explainedByLag": p.explained_by_lag,
                    }
                    for p in d.series
                ],
            }
            for d in report.drift
        ],
    }
