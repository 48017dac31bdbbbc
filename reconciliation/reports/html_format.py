"""One self-contained HTML file: inline CSS, inline SVG charts, no script, no external asset.

It must open from an e-mail attachment on a laptop without network, and print cleanly; so
everything it shows is in the file, and every value from the store is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from reconciliation.reports.charts import lines_over_time, stacked_bars
from reconciliation.reports.model import AGEING_BUCKETS, STREAMS, Report
from reconciliation.reports.text import money

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .85rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.drift { color: #b00; font-weight: bold; } .muted { color: #777; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: .5rem 1rem; }
.card b { display: block; font-size: 1.3rem; }
"""


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{escape(cell)}</td>' if i in numeric else f"<td>{escape(cell)}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: Report) -> str:
    window = report.window
    since = window.since.isoformat() if window.since else "the beginning"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>Reconciliation report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Reconciliation report</h1>",
        f'<p class="muted">{escape(since)} to {escape(window.until.isoformat())}'
        + (f", holding {escape(window.holding_ref)}" if window.holding_ref else "")
        + f". Generated {escape(report.generated_at.isoformat())}.</p>",
        '<div class="cards">'
        + "".join(
            f'<div class="card">{escape(name)}<b>{value}</b></div>'
            for name, value in report.summary().items()
        )
        + "</div>",
        "<h2>Open exceptions by age</h2>",
        stacked_bars(
            "Open exceptions by age (days)",
            [(label, report.ageing.counts.get(label, {})) for label, _, _ in AGEING_BUCKETS],
            STREAMS,
        ),
        _table(
            ["days", *(f"{s}s" for s in STREAMS), "amount"],
            (
                [
                    label,
                    *(str(report.ageing.counts.get(label, {}).get(s, 0)) for s in STREAMS),
                    ", ".join(
                        money(a, c) for c, a in sorted(report.ageing.amounts.get(label, {}).items())
                    )
                    or "-",
                ]
                for label, _, _ in AGEING_BUCKETS
            ),
            {1, 2, 3, 4},
        ),
    ]
    if report.ageing.oldest:
        parts += [
            "<h2>Oldest open exceptions</h2>",
            _table(
                ["stream", "id", "reference", "holding", "amount", "age (days)", "status"],
                (
                    [
                        e.stream,
                        str(e.item_id),
                        e.reference,
                        e.holding_ref,
                        money(e.amount_minor, e.currency),
                        str(e.age_days),
                        e.status,
                    ]
                    for e in report.ageing.oldest
                ),
                {1, 4, 5},
            ),
        ]
    parts += [
        "<h2>Balance drift</h2>",
        lines_over_time(
            "Balance minus posted sum, over time (minor units)",
            [
                (d.holding_ref, [(p.observed_at, p.drift_minor) for p in d.series])
                for d in report.drift
                if d.series
            ],
        ),
        _table(
            ["holding", "observed", "balance", "posted", "drift", "note"],
            (
                [
                    d.holding_ref,
                    d.observed_at.isoformat(),
                    money(d.settled_minor, d.currency),
                    money(d.posted_minor, d.currency),
                    money(d.drift_minor, d.currency),
                    "projection lag"
                    if d.explained_by_lag
                    else ("" if d.drift_minor == 0 else "DRIFT"),
                ]
                for d in report.drift
            ),
            {2, 3, 4},
        ),
        "<h2>Totals by holding and unit</h2>",
        _table(
            [
                "holding",
                "unit",
                "posted",
                "net posted",
                "notified",
                "transferred",
                "matched",
                "unmatched",
            ],
            (
                [
                    t.holding_ref,
                    t.currency,
                    str(t.posted_count),
                    money(t.posted_minor, t.currency),
                    f"{t.notified_count} / {money(t.notified_minor, t.currency)}",
                    f"{t.transferred_count} / {money(t.transferred_minor, t.currency)}",
                    str(t.matched_count),
                    str(t.unmatched_count),
                ]
                for t in report.totals
            ),
            {2, 3, 4, 5, 6, 7},
        ),
        "<h2>Alerts in the window</h2>",
        _table(
            ["kind", "severity", "opened", "resolved"],
            ([a.kind, a.severity, str(a.opened), str(a.resolved)] for a in report.alerts),
            {2, 3},
        ),
    ]
    if report.open_alerts:
        parts += [
            "<h2>Open alerts</h2>",
            _table(
                ["id", "severity", "state", "kind", "subject", "opened"],
                (
                    [
                        str(o.alert_id),
                        o.severity,
                        o.state,
                        o.kind,
                        o.subject,
                        o.opened_at.isoformat(),
                    ]
                    for o in report.open_alerts
                ),
                {0},
            ),
        ]
    parts.append("</body></html>")
    return "\n".join(parts)
