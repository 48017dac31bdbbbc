"""CSV: one long table (section, holding, currency, metric, value), so any spreadsheet or
`csv` reader takes the whole report without knowing its sections in advance."""

from __future__ import annotations

import csv
import io

from reconciliation.reports.model import Report

HEADER = ("section", "holding_ref", "currency", "metric", "value")


def render_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    window = report.window
    writer.writerow(("window", "", "", "since", window.since.isoformat() if window.since else ""))
    writer.writerow(("window", "", "", "until", window.until.isoformat()))
    for t in report.totals:
        for metric, value in (
            ("posted_count", t.posted_count),
            ("credits_minor", t.credits_minor),
            ("debits_minor", t.debits_minor),
            ("posted_minor", t.posted_minor),
            ("notified_count", t.notified_count),
            ("notified_minor", t.notified_minor),
            ("transferred_count", t.transferred_count),
            ("transferred_minor", t.transferred_minor),
            ("matched_count", t.matched_count),
            ("unmatched_count", t.unmatched_count),
        ):
            writer.writerow(("totals", t.holding_ref, t.currency, metric, value))
    for bucket, by_stream in report.ageing.counts.items():
        for stream, count in sorted(by_stream.items()):
            writer.writerow(("open_exceptions", "", "", f"{bucket} days:{stream}", count))
    for bucket, by_currency in report.ageing.amounts.items():
        for currency, amount in sorted(by_currency.items()):
            writer.writerow(
                ("open_exceptions", "", currency, f"{bucket} days:amount_minor", amount)
            )
    for a in report.alerts:
        writer.writerow(("alerts", "", "", f"{a.kind}:{a.severity}:opened", a.opened))
        writer.writerow(("alerts", "", "", f"{a.kind}:{a.severity}:resolved", a.resolved))
    for d in report.drift:
        writer.writerow(
            ("balance_drift", d.holding_ref, d.currency, "settled_minor", d.settled_minor)
        )
        writer.writerow(
            ("balance_drift", d.holding_ref, d.currency, "posted_minor", d.posted_minor)
        )
        writer.writerow(("balance_drift", d.holding_ref, d.currency, "drift_minor", d.drift_minor))
        writer.writerow(
            (
                "balance_drift",
                d.holding_ref,
                d.currency,
                "explained_by_lag",
                int(d.explained_by_lag),
            )
        )
    return out.getvalue()
