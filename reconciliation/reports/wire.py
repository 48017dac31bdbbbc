"""The report as plain data for JSON: exact amounts with their unit and its exponent.

Money is an integer of minor units written as a JSON string of digits ("150050", "-25"): a
JSON number past 2**53 is rounded by most readers (JavaScript's among them), and an on-chain
amount passes that at a fraction of one whole unit. Each amount sits next to its `currency`
(the value unit's code) and that unit's `exponent` (ISO 4217, or RECON_UNIT_EXPONENTS for other
units; null when recon knows neither), so a reader can show major units without a table of its
own. Times are ISO 8601 in UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from foundation.money import currency_exponent
from reconciliation.reports.legend import legend
from reconciliation.reports.model import TRANSFER_OUTCOMES, Report


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def minor(amount: int) -> str:
    """An amount as JSON carries it: its exact digits in a string."""
    return str(amount)


def camel(name: str) -> str:
    """'in_flight' -> 'inFlight': the JSON spelling of a snake_case name."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def report_as_dict(report: Report) -> dict[str, Any]:
    window = report.window
    figures = report.figures()
    return {
        "generatedAt": _when(report.generated_at),
        "window": {
            "since": _when(window.since),
            "until": _when(window.until),
            "holdingRef": report.scope.ref if report.scope else None,
            "accountNumber": report.scope.account_number if report.scope else None,
            "accountName": report.scope.account_name if report.scope else None,
        },
        "graceSeconds": report.grace_seconds,
        "legend": dict(legend(report.grace_seconds)),
        "summary": figures,
        "lastAudit": {
            "line": report.audit_line(),
            "run": report.last_audit.as_dict() if report.last_audit is not None else None,
        },
        "totals": [
            {
                **_holding(report, t.holding_ref),
                "currency": t.currency,
                "exponent": currency_exponent(t.currency),
                "postedCount": t.posted_count,
                "creditsMinor": minor(t.credits_minor),
                "debitsMinor": minor(t.debits_minor),
                "postedMinor": minor(t.posted_minor),
                "notifiedCount": t.notified_count,
                "notifiedMinor": minor(t.notified_minor),
                "transfers": {
                    camel(outcome): {
                        "count": t.transfers[outcome].count,
                        "amountMinor": minor(t.transfers[outcome].amount_minor),
                    }
                    for outcome in TRANSFER_OUTCOMES
                },
                "items": t.items,
                "matchedCount": t.matched_count,
                "acceptedCount": t.accepted_count,
                "unmatchedCount": t.unmatched_count,
                "waitingCount": t.waiting_count,
                "exceptionCount": t.exception_count,
            }
            for t in report.totals
        ],
        "fees": [
            {
                **_holding(report, f.holding_ref),
                "currency": f.currency,
                "exponent": currency_exponent(f.currency),
                "kind": f.kind,
                "bearer": f.bearer,
                "count": f.count,
                "amountMinor": minor(f.amount_minor),
                "unknownCount": f.unknown_count,
            }
            for f in report.fees
        ],
        "openItems": {
            "total": figures["unmatched"],
            "listed": len(report.open_items),
            "items": [
                {
                    "stream": e.stream,
                    "id": e.item_id,
                    "reference": e.reference,
                    **_holding(report, e.holding_ref),
                    "currency": e.currency,
                    "exponent": currency_exponent(e.currency),
                    "amountMinor": minor(e.amount_minor),
                    "since": _when(e.since),
                    "ageDays": e.age_days,
                    "state": e.state,
                    "why": e.why,
                }
                for e in report.open_items
            ],
        },
        "openExceptions": {
            "total": report.ageing.total,
            "byBucket": report.ageing.counts,
            "amountsByBucket": {
                bucket: {unit: minor(amount) for unit, amount in by_unit.items()}
                for bucket, by_unit in report.ageing.amounts.items()
            },
        },
        "alerts": {
            "byKind": [
                {"kind": a.kind, "severity": a.severity, "opened": a.opened, "resolved": a.resolved}
                for a in report.alerts
            ],
            "openTotal": report.open_alert_count,
            "open": [
                {
                    "id": a.alert_id,
                    "kind": a.kind,
                    "severity": a.severity,
                    "state": a.state,
                    "subject": a.subject,
                    "openedAt": _when(a.opened_at),
                    "acknowledgedBy": a.acknowledged_by,
                    "note": a.note,
                }
                for a in report.open_alerts
            ],
        },
        "balanceDrift": [
            {
                **_holding(report, d.holding_ref),
                "currency": d.currency,
                "exponent": currency_exponent(d.currency),
                "observedAt": _when(d.observed_at),
                "settledMinor": minor(d.settled_minor),
                "postedMinor": minor(d.posted_minor),
                "driftMinor": minor(d.drift_minor),
                "explainedByLag": d.explained_by_lag,
                "series": [
                    {
                        "observedAt": _when(p.observed_at),
                        "driftMinor": minor(p.drift_minor),
                        "explainedByLag": p.explained_by_lag,
                    }
                    for p in d.series
                ],
            }
            for d in report.drift
        ],
    }


def _holding(report: Report, holding_ref: str) -> dict[str, str | None]:
    """A holding as JSON names it: the holdingRef, and the account people know it by."""
    held = report.holding(holding_ref)
    return {
        "holdingRef": holding_ref,
        "accountNumber": held.account_number,
        "accountName": held.account_name,
    }
