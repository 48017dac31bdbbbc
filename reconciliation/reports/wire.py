"""The report as plain data for JSON: exact amounts with their unit and its exponent.

Money is an integer of minor units written as a JSON string of digits ("150050", "-25"): a
JSON number past 2**53 is rounded by most readers (JavaScript's among them), and an on-chain
amount passes that at a fraction of one whole unit. Each amount sits next to its `currency`
(the value unit's code) and that unit's `exponent` (ISO 4217, or RECON_UNIT_EXPONENTS for other
units; null when recon knows neither), so a reader can show major units without a table of its
own. Times are ISO 8601 in UTC.

Every list of the JSON (totals, fees, open items, alerts, balance drift) is a section of
`reconciliation.reports.sections` written row by row through its columns' `json` keys: what a
column holds is said there once, for every format. The rest is the report's own values (the
window, the figures, the legend, the last audit, exceptions by age) as the model holds them.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from foundation import currency_exponent
from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.legend import legend_terms
from reconciliation.reports.model import DriftPoint, Report
from reconciliation.reports.sections import build_sections
from reconciliation.reports.tables import (
    COUNTED,
    HOLDING,
    MOMENT,
    MONEY,
    POINTS,
    UNIT,
    Cell,
    Counted,
    Money,
    Section,
)


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _value(kind: str, key: str, cell: Cell) -> dict[str, Any]:
    """A cell as the JSON keys it fills (a holding and a unit fill more than one)."""
    if kind == HOLDING and isinstance(cell, HoldingIdentity):
        return {
            "holdingRef": cell.ref,
            "accountNumber": cell.account_number,
            "accountName": cell.account_name,
        }
    if kind == UNIT and isinstance(cell, str):
        return {key: cell, "exponent": currency_exponent(cell)}
    if kind == MONEY and isinstance(cell, Money):
        return {key: str(cell.minor)}
    if kind == COUNTED and isinstance(cell, Counted):
        return {key: {"count": cell.count, "amountMinor": str(cell.amount.minor)}}
    if kind == MOMENT and (cell is None or isinstance(cell, datetime)):
        return {key: _when(cell)}
    if kind == POINTS and isinstance(cell, tuple):
        return {key: [_point(p) for p in cell if isinstance(p, DriftPoint)]}
    return {key: cell}


def _point(point: DriftPoint) -> dict[str, Any]:
    return {
        "observedAt": _when(point.observed_at),
        "driftMinor": str(point.drift_minor),
        "explainedByLag": point.explained_by_lag,
    }


def records(section: Section) -> list[dict[str, Any]]:
    """Each row of `section` as a JSON object, keyed by its columns' `json` keys (a dotted key
    nests: `transfers.inFlight` is `{"transfers": {"inFlight": ...}}`)."""
    columns, rows = section.for_json()
    found = []
    for row in rows:
        record: dict[str, Any] = {}
        for column, cell in zip(columns, row, strict=True):
            *outer, key = (column.json or column.key).split(".")
            into = record
            for name in outer:
                into = into.setdefault(name, {})
            into.update(_value(column.kind, key, cell))
        found.append(record)
    return found


def report_as_dict(report: Report) -> dict[str, Any]:
    window = report.window
    figures = report.figures()
    sections = {s.key: s for s in build_sections(report)}
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
        "legend": dict(legend_terms(report.grace_seconds)),
        "summary": figures,
        "lastAudit": {
            "line": report.audit_line(),
            "run": report.last_audit.as_dict() if report.last_audit is not None else None,
        },
        # One entry per holding and unit: its items, and (the same rows, in the same order)
        # what was notified and transferred.
        "totals": [
            {**items, **moved}
            for items, moved in zip(
                records(sections["totals"]), records(sections["transfers"]), strict=True
            )
        ],
        "fees": records(sections["fees"]),
        "openItems": {
            "total": figures["unmatched"],
            "listed": len(report.open_items),
            "items": records(sections["items"]),
        },
        "openExceptions": {
            "total": report.ageing.total,
            "byBucket": report.ageing.counts,
            "amountsByBucket": {
                bucket: {unit: str(amount) for unit, amount in by_unit.items()}
                for bucket, by_unit in report.ageing.amounts.items()
            },
        },
        "alerts": {
            "byKind": records(sections["alerts"]),
            "openTotal": report.open_alert_count,
            "open": records(sections["open_alerts"]),
        },
        "balanceDrift": records(sections["drift"]),
    }


def render_json(report: Report) -> str:
    return json.dumps(report_as_dict(report), indent=2) + "\n"
