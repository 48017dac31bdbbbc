"""One self-contained HTML file: inline CSS, inline SVG charts, no script, no external asset.

It must open from an e-mail attachment on a laptop without network, and print cleanly; so
everything it shows is in the file, and every value from the store is escaped. It draws the
report's sections (`reconciliation.reports.build_sections`, the one model of every format),
cell by cell as text does (`app.report_formats.people`), with cards above the figures and a
chart above exceptions by age and drift. A holding reads as its account number and name, its holdingRef
shown on hover. A chart with nothing to draw is one line of text, not an empty box.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from app.report_formats.charts import lines_over_time, stacked_bars
from app.report_formats.people import for_people, window_line
from foundation import format_money, moment
from foundation import html_text as escape
from reconciliation.postings import HoldingIdentity
from reconciliation.reports import (
    AGEING_BUCKETS,
    STREAMS,
    SUMMARY,
    Cell,
    Column,
    Report,
    Section,
    build_sections,
    grace_words,
    legend_terms,
)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; max-width: 75rem; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .85rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
div.table { max-width: 100%; overflow-x: auto; }
td.w { white-space: normal; overflow-wrap: anywhere; min-width: 10rem; }
th { background: #f4f4f4; }
td.n { text-align: right; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.muted { color: #666; } .empty { color: #666; font-style: italic; }
.cards { display: flex; gap: .75rem; flex-wrap: wrap; margin: 1rem 0; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: .4rem .8rem; min-width: 7rem; }
.card b { display: block; font-size: 1.3rem; font-variant-numeric: tabular-nums; }
.card.alarm b { color: #b00; }
p.audit { margin: .3rem 0; } p.audit.alarm { color: #b00; font-weight: bold; }
dl.legend { font-size: .85rem; display: grid; grid-template-columns: max-content 1fr;
  gap: .2rem 1rem; margin: .5rem 0 1rem; }
dl.legend dt { font-weight: bold; } dl.legend dd { margin: 0; }
"""

#: Figures shown as cards at the top, with a short label each (the table below has them all).
CARD_LABELS = {
    "items": "items",
    "matched": "matched",
    "accepted": "accepted alone",
    "waiting": "waiting",
    "exceptions": "exceptions",
    "transfersInFlight": "transfers in flight",
    "openAlerts": "alerts open",
    "holdingsDrifting": "balances drifting",
}

#: Cards drawn in red when not zero: each needs a person.
ALARMING = {"exceptions", "openAlerts", "holdingsDrifting"}


def _cell(column: Column, cell: Cell) -> str:
    """One cell: numbers align right, prose may wrap, a holding carries its holdingRef in a
    title attribute (hover) beside the account people know it by."""
    kind = "n" if column.numeric else "w" if column.prose else ""
    attributes = f' class="{kind}"' if kind else ""
    if isinstance(cell, HoldingIdentity):
        attributes += f' title="holdingRef {escape(cell.ref)}"'
    return f"<td{attributes}>{escape(for_people(column.kind, cell))}</td>"


def _empty(text: str) -> str:
    return f'<p class="empty">{escape(text)}</p>'


def _section(section: Section, report: Report) -> list[str]:
    """A section's heading, its chart when it has one, and its table (or its one sentence)."""
    parts = [f"<h2>{escape(section.title)}</h2>"]
    chart = CHARTS.get(section.key)
    if not section.rows:
        return [*parts, _empty(section.empty)]
    if chart is not None:
        parts.append(chart(report))
    columns, rows = section.for_people()
    head = "".join(f"<th>{escape(c.title)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(_cell(c, cell) for c, cell in zip(columns, row, strict=True)) + "</tr>"
        for row in rows
    )
    parts.append(
        f'<div class="table"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
    return parts


def render_html(report: Report) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>Reconciliation report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Reconciliation report</h1>",
        render_body(report),
        "</body></html>",
    ]
    return "\n".join(parts)


def render_body(report: Report) -> str:
    """The report under its heading, without the document around it or its style: what the
    console shows on its Reports page, in its own style (no inline style for its policy to
    allow), so a person reads tables there rather than a text dump."""
    figures = report.figures()
    parts = [
        f'<p class="muted">{escape(window_line(report))}. Generated '
        f"{escape(moment(report.generated_at))}; notification grace "
        f"{escape(grace_words(report.grace_seconds))}.</p>",
        _audit(report),
        '<div class="cards">'
        + "".join(
            f'<div class="card{" alarm" if name in ALARMING and figures[name] else ""}">'
            f"{escape(CARD_LABELS[name])}<b>{figures[name]:,}</b></div>"
            for name in CARD_LABELS
        )
        + "</div>",
    ]
    for section in build_sections(report):
        if section.people:
            parts += _section(section, report)
        if section.key == SUMMARY:  # the figures, then what they count
            parts.append(
                '<dl class="legend">'
                + "".join(
                    f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>"
                    for term, text in legend_terms(report.grace_seconds)
                )
                + "</dl>"
            )
    return "\n".join(parts)


def _audit(report: Report) -> str:
    """The last ledger audit, in red when it found the books and the store apart or failed."""
    found = report.last_audit
    alarm = found is not None and found.needs_a_person
    return f'<p class="audit{" alarm" if alarm else ""}">{escape(report.audit_line())}.</p>'


def _ageing_chart(report: Report) -> str:
    return stacked_bars(
        "Exceptions by age (days)",
        [(label, report.ageing.counts.get(label, {})) for label, _, _ in AGEING_BUCKETS],
        STREAMS,
    )


def _drift_chart(report: Report) -> str:
    """Drift over time of the holdings that drifted, or one line saying none did."""
    drawn = [d for d in report.drift if d.series]
    if not drawn:
        return _empty("No drift in this window: every balance matched its postings.")
    currencies = {d.currency for d in drawn}
    only = next(iter(currencies)) if len(currencies) == 1 else None

    def label(value: int) -> str:
        return format_money(value, only, signed=True) if only else f"{value:+,} minor units"

    chart = lines_over_time(
        "Balance minus postings sum, over time",
        [
            (
                report.holding(d.holding_ref).label,
                [(p.observed_at, p.drift_minor, p.explained_by_lag) for p in d.series],
            )
            for d in drawn
        ],
        label,
    )
    # The same count as the figure "holdings whose balance drifts": a line away from zero
    # earlier in the window, or drawn hollow (transfers in flight explain it), is not drift now.
    now = report.figures()["holdingsDrifting"]
    return chart + (
        f'<p class="muted chart-note" data-drifting="{now}">At the latest check '
        f"{now:,} holding{'' if now == 1 else 's'} drift (the figure above). A line back at 0 "
        "is drift that cleared; a hollow point is a difference that transfers still in flight "
        "explain, not drift.</p>"
    )


#: Sections drawn with a chart above their table: section key -> the chart.
CHARTS: Final[dict[str, Callable[[Report], str]]] = {
    "ageing": _ageing_chart,
    "drift": _drift_chart,
}
