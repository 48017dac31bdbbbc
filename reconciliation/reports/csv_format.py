"""CSV: one long table (section, holding, currency, metric, value), so any spreadsheet or
`csv` reader takes the whole report without knowing its sections in advance.

Amounts stay exact integer minor units (metrics ending `_minor`); the `currency` column says
which currency, and a `currencies` section gives each one's exponent. The legend is a section
too, so a figure never travels without what it counts.
"""

from __future__ import annotations

import csv
import io

from foundation.money import currency_exponent
from reconciliation.reports.legend import legend
from reconciliation.reports.model import TRANSFER_OUTCOMES, Report

HEADER = ("section", "holding_ref", "currency", "metric", "value")


def _audit_rows(report: Report) -> list[tuple[str, object]]:
    """The last ledger audit: its sentence, then (once one finished) its figures."""
    rows: list[tuple[str, object]] = [("line", report.audit_line())]
    found = report.last_audit
    if found is not None:
        rows += [
            ("run", found.run_id),
            ("finished_at", found.finished_at.isoformat()),
            ("status", found.status),
            ("holdings", found.holdings),
            ("postings", found.postings),
            ("divergences", found.divergences),
            ("missing", found.missing),
            ("unknown", found.unknown),
            ("differing", found.differing),
            ("partial", int(found.partial)),
        ]
    return rows


def render_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    window = report.window
    writer.writerow(("window", "", "", "since", window.since.isoformat() if window.since else ""))
    writer.writerow(("window", "", "", "until", window.until.isoformat()))
    writer.writerow(("window", "", "", "grace_seconds", report.grace_seconds))
    for term, definition in legend(report.grace_seconds):
        writer.writerow(("legend", "", "", term, definition))
    for name, value in report.figures().items():
        writer.writerow(("summary", "", "", name, value))
    for metric, fact in _audit_rows(report):
        writer.writerow(("last_audit", "", "", metric, fact))
    currencies = sorted({t.currency for t in report.totals} | {d.currency for d in report.drift})
    for currency in currencies:
        exp = currency_exponent(currency)
        writer.writerow(("currencies", "", currency, "exponent", "" if exp is None else exp))
    for ref, holding in sorted(report.names.items()):
        writer.writerow(("holdings", ref, "", "account_number", holding.account_number or ""))
        writer.writerow(("holdings", ref, "", "account_name", holding.account_name or ""))
    for t in report.totals:
        metrics: list[tuple[str, int]] = [
            ("posted_count", t.posted_count),
            ("credits_minor", t.credits_minor),
            ("debits_minor", t.debits_minor),
            ("posted_minor", t.posted_minor),
            ("notified_count", t.notified_count),
            ("notified_minor", t.notified_minor),
        ]
        for outcome in TRANSFER_OUTCOMES:
            metrics.append((f"transfers_{outcome}_count", t.transfers[outcome].count))
            metrics.append((f"transfers_{outcome}_minor", t.transfers[outcome].amount_minor))
        metrics += [
            ("items", t.items),
            ("matched_count", t.matched_count),
            ("unmatched_count", t.unmatched_count),
            ("waiting_count", t.waiting_count),
            ("exception_count", t.exception_count),
        ]
        for metric, value in metrics:
            writer.writerow(("totals", t.holding_ref, t.currency, metric, value))
    for f in report.fees:
        for metric, value in (
            ("count", f.count),
            ("amount_minor", f.amount_minor),
            ("unknown_count", f.unknown_count),
        ):
            writer.writerow(
                ("fees", f.holding_ref, f.currency, f"{f.kind}:{f.bearer}:{metric}", value)
            )
    for e in report.open_items:
        writer.writerow(
            (
                "open_items",
                e.holding_ref,
                e.currency,
                f"{e.state}:{e.stream}:{e.item_id}:{e.reference}:{e.since.isoformat()}",
                e.amount_minor,
            )
        )
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
    for o in report.open_alerts:
        writer.writerow(("open_alerts", "", "", f"{o.alert_id}:{o.kind}:{o.severity}", o.state))
    for d in report.drift:
        for metric, value in (
            ("settled_minor", d.settled_minor),
            ("posted_minor", d.posted_minor),
            ("drift_minor", d.drift_minor),
            ("explained_by_lag", int(d.explained_by_lag)),
        ):
            writer.writerow(("balance_drift", d.holding_ref, d.currency, metric, value))
    return out.getvalue()
