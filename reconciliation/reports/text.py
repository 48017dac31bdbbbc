"""Plain text for a terminal or an e-mail: Rich tables, rendered without colour to a string."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from foundation.money import AmountError, format_minor
from reconciliation.reports.model import AGEING_BUCKETS, STREAMS, Report

#: Width of the rendered text; wide enough for a holdingRef and five numbers.
WIDTH = 140


def money(amount: int, currency: str) -> str:
    """Major units for people; raw minor units when the currency's exponent is unknown."""
    try:
        return f"{format_minor(amount, currency)} {currency}"
    except AmountError:
        return f"{amount} minor {currency}"


def render_text(report: Report) -> str:
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system=None, force_terminal=False)
    window = report.window
    since = window.since.isoformat() if window.since else "the beginning"
    console.print(f"Reconciliation report, {since} to {window.until.isoformat()}")
    if window.holding_ref:
        console.print(f"Holding {window.holding_ref}")
    console.print(f"Generated {report.generated_at.isoformat()}")
    summary = Table(title="Summary", show_header=False)
    for name, value in report.summary().items():
        summary.add_row(name, str(value))
    console.print(summary)

    totals = Table(title="Totals by holding and unit")
    for header in (
        "holding",
        "unit",
        "posted",
        "net posted",
        "notified",
        "transferred",
        "matched",
        "unmatched",
    ):
        totals.add_column(header, justify="left" if header in ("holding", "unit") else "right")
    for t in report.totals:
        totals.add_row(
            t.holding_ref,
            t.currency,
            str(t.posted_count),
            money(t.posted_minor, t.currency),
            f"{t.notified_count} / {money(t.notified_minor, t.currency)}",
            f"{t.transferred_count} / {money(t.transferred_minor, t.currency)}",
            str(t.matched_count),
            str(t.unmatched_count),
        )
    console.print(totals)

    ageing = Table(title=f"Open exceptions by age ({report.ageing.total})")
    ageing.add_column("days")
    for stream in STREAMS:
        ageing.add_column(f"{stream}s", justify="right")
    ageing.add_column("amount", justify="right")
    for label, _, _ in AGEING_BUCKETS:
        counts = report.ageing.counts.get(label, {})
        amounts = report.ageing.amounts.get(label, {})
        ageing.add_row(
            label,
            *(str(counts.get(s, 0)) for s in STREAMS),
            ", ".join(money(a, c) for c, a in sorted(amounts.items())) or "-",
        )
    console.print(ageing)
    if report.ageing.oldest:
        oldest = Table(title="Oldest open exceptions")
        for header in ("stream", "id", "reference", "holding", "amount", "age (days)", "status"):
            oldest.add_column(header)
        for e in report.ageing.oldest:
            oldest.add_row(
                e.stream,
                str(e.item_id),
                e.reference,
                e.holding_ref,
                money(e.amount_minor, e.currency),
                str(e.age_days),
                e.status,
            )
        console.print(oldest)

    alerts = Table(title="Alerts in the window")
    for header in ("kind", "severity", "opened", "resolved"):
        alerts.add_column(header)
    for a in report.alerts:
        alerts.add_row(a.kind, a.severity, str(a.opened), str(a.resolved))
    console.print(alerts)
    if report.open_alerts:
        still = Table(title="Open alerts")
        for header in ("id", "severity", "state", "kind", "subject"):
            still.add_column(header)
        for o in report.open_alerts:
            still.add_row(str(o.alert_id), o.severity, o.state, o.kind, o.subject)
        console.print(still)

    drift = Table(title="Balance drift per holding (latest check)")
    for header in ("holding", "observed", "balance", "posted", "drift", "note"):
        drift.add_column(header)
    for d in report.drift:
        note = "projection lag" if d.explained_by_lag else ("" if d.drift_minor == 0 else "DRIFT")
        drift.add_row(
            d.holding_ref,
            d.observed_at.isoformat(),
            money(d.settled_minor, d.currency),
            money(d.posted_minor, d.currency),
            money(d.drift_minor, d.currency),
            note,
        )
    console.print(drift)
    return out.getvalue()
