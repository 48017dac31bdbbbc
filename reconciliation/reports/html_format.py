"""One self-contained HTML file: inline CSS, inline SVG charts, no script, no external asset.

It must open from an e-mail attachment on a laptop without network, and print cleanly; so
everything it shows is in the file, and every value from the store is escaped. It reads like
the text report: the same figures with the same legend, amounts through `format_money`, times
through `moment`, holdings by account number and name. A chart with nothing to draw is one
line of text, not an empty box.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from foundation.money import format_money
from foundation.readable import moment, words
from reconciliation.reports.charts import lines_over_time, stacked_bars
from reconciliation.reports.legend import grace_words, legend
from reconciliation.reports.model import AGEING_BUCKETS, STREAMS, TRANSFER_OUTCOMES, Report
from reconciliation.reports.text import FIGURE_LABELS, audit_sentence, drift_note, window_line

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 72rem; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .85rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top;
  white-space: nowrap; }
td.w { white-space: normal; overflow-wrap: anywhere; min-width: 10rem; }
th { background: #f4f4f4; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
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
    "waiting": "waiting",
    "exceptions": "exceptions",
    "transfersInFlight": "transfers in flight",
    "openAlerts": "alerts open",
    "holdingsDrifting": "balances drifting",
}

#: Cards drawn in red when not zero: each needs a person.
ALARMING = {"exceptions", "openAlerts", "holdingsDrifting"}


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: set[int],
    wrapping: frozenset[int] = frozenset(),
) -> str:
    """A table; `numeric` columns align right, `wrapping` ones (long prose) may wrap."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)

    def cell(index: int, value: str) -> str:
        kind = "n" if index in numeric else "w" if index in wrapping else ""
        return f'<td class="{kind}">{escape(value)}</td>' if kind else f"<td>{escape(value)}</td>"

    body = "".join(
        "<tr>" + "".join(cell(i, value) for i, value in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _empty(text: str) -> str:
    return f'<p class="empty">{escape(text)}</p>'


def render_html(report: Report) -> str:
    figures = report.figures()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>Reconciliation report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Reconciliation report</h1>",
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
        _table(
            ["figure", "count"],
            ([FIGURE_LABELS.get(k, k).strip(), f"{v:,}"] for k, v in figures.items()),
            {1},
        ),
        '<dl class="legend">'
        + "".join(
            f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>"
            for term, text in legend(report.grace_seconds)
        )
        + "</dl>",
    ]
    parts += _exceptions(report)
    parts += _open_items(report)
    parts += _drift(report)
    parts += _totals(report)
    parts += fee_section(report)
    parts += _alerts(report)
    parts.append("</body></html>")
    return "\n".join(parts)


def _audit(report: Report) -> str:
    """The last ledger audit, in red when it found the books and the store apart or failed."""
    found = report.last_audit
    alarm = found is not None and found.needs_a_person
    return f'<p class="audit{" alarm" if alarm else ""}">{escape(audit_sentence(report))}.</p>'


def _exceptions(report: Report) -> list[str]:
    if not report.ageing.total:
        return ["<h2>Exceptions by age</h2>", _empty("No exceptions: nothing needs a person.")]
    return [
        f"<h2>Exceptions by age ({report.ageing.total:,})</h2>",
        stacked_bars(
            "Exceptions by age (days)",
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
                        format_money(a, c)
                        for c, a in sorted(report.ageing.amounts.get(label, {}).items())
                    )
                    or "-",
                ]
                for label, _, _ in AGEING_BUCKETS
            ),
            {1, 2, 3, 4},
        ),
    ]


def _open_items(report: Report) -> list[str]:
    total = report.figures()["unmatched"]
    if not total:
        return ["<h2>Unmatched items</h2>", _empty("None: every item in the window is matched.")]
    listed = len(report.open_items)
    shown = f"{total:,}" if listed == total else f"{total:,}, the oldest {listed} listed"
    return [
        f"<h2>Unmatched items ({shown})</h2>",
        _table(
            ["state", "stream", "id", "holding", "amount", "since", "why", "reference"],
            (
                [
                    words(e.state),
                    e.stream,
                    str(e.item_id),
                    report.holding_label(e.holding_ref),
                    format_money(e.amount_minor, e.currency),
                    moment(e.since),
                    e.why,
                    e.reference,
                ]
                for e in report.open_items
            ),
            {2, 4},
            frozenset({6, 7}),
        ),
    ]


def _drift(report: Report) -> list[str]:
    parts = ["<h2>Balance against postings</h2>"]
    if not report.drift:
        return [*parts, _empty("No balance checked yet.")]
    drawn = [d for d in report.drift if d.series]
    currencies = {d.currency for d in drawn}
    if drawn:
        only = next(iter(currencies)) if len(currencies) == 1 else None

        def label(value: int) -> str:
            return format_money(value, only, signed=True) if only else f"{value:+,} minor units"

        parts.append(
            lines_over_time(
                "Balance minus postings sum, over time",
                [
                    (
                        report.holding_label(d.holding_ref),
                        [(p.observed_at, p.drift_minor) for p in d.series],
                    )
                    for d in drawn
                ],
                label,
            )
        )
    else:
        parts.append(_empty("No drift in this window: every balance matched its postings."))
    parts.append(
        _table(
            ["holding", "checked", "balance", "postings sum", "drift", "note"],
            (
                [
                    report.holding_label(d.holding_ref),
                    moment(d.observed_at),
                    format_money(d.settled_minor, d.currency),
                    format_money(d.posted_minor, d.currency),
                    format_money(d.drift_minor, d.currency, signed=True),
                    drift_note(d.drift_minor, d.explained_by_lag),
                ]
                for d in report.drift
            ),
            {2, 3, 4},
        )
    )
    return parts


def _totals(report: Report) -> list[str]:
    if not report.totals:
        return ["<h2>Items by holding and unit</h2>", _empty("No items in the window.")]
    return [
        "<h2>Items by holding and unit</h2>",
        _table(
            [
                "holding",
                "unit",
                "items",
                "matched",
                "waiting",
                "exceptions",
                "posted",
                "net posted",
            ],
            (
                [
                    report.holding_label(t.holding_ref),
                    t.currency,
                    f"{t.items:,}",
                    f"{t.matched_count:,}",
                    f"{t.waiting_count:,}",
                    f"{t.exception_count:,}",
                    f"{t.posted_count:,}",
                    format_money(t.posted_minor, t.currency),
                ]
                for t in report.totals
            ),
            {2, 3, 4, 5, 6, 7},
        ),
        "<h2>Notified and transferred, by outcome</h2>",
        _table(
            ["holding", "unit", "notified", *(words(o) for o in TRANSFER_OUTCOMES)],
            (
                [
                    report.holding_label(t.holding_ref),
                    t.currency,
                    f"{t.notified_count} / {format_money(t.notified_minor, t.currency)}",
                    *(
                        f"{t.transfers[o].count} / "
                        f"{format_money(t.transfers[o].amount_minor, t.currency)}"
                        for o in TRANSFER_OUTCOMES
                    ),
                ]
                for t in report.totals
            ),
            {2, 3, 4, 5, 6},
        ),
    ]


def fee_section(report: Report) -> list[str]:
    """The fees table (also drawn on the console's holding and reports pages)."""
    title = "<h2>Fees of settled transfers, by kind and bearer</h2>"
    if not report.fees:
        return [title, _empty("No fee charged on a settled transfer in the window.")]
    return [
        title,
        _table(
            ["holding", "unit", "kind", "bearer", "transfers", "fees", "unknown"],
            (
                [
                    report.holding_label(f.holding_ref),
                    f.currency,
                    f.kind,
                    f.bearer,
                    f"{f.count:,}",
                    format_money(f.amount_minor, f.currency),
                    f"{f.unknown_count:,}",
                ]
                for f in report.fees
            ),
            {4, 5, 6},
        ),
    ]


def _alerts(report: Report) -> list[str]:
    parts = ["<h2>Alerts in the window</h2>"]
    if report.alerts:
        parts.append(
            _table(
                ["kind", "severity", "opened", "resolved"],
                ([a.kind, a.severity, str(a.opened), str(a.resolved)] for a in report.alerts),
                {2, 3},
            )
        )
    else:
        parts.append(_empty("None opened or resolved in the window."))
    count, listed = report.open_alert_count, len(report.open_alerts)
    if not count:
        return [*parts, "<h2>Alerts open now</h2>", _empty("None.")]
    shown = f"{count:,}" if listed == count else f"{count:,}, the {listed} most urgent listed"
    return [
        *parts,
        f"<h2>Alerts open now ({shown})</h2>",
        _table(
            ["id", "severity", "state", "kind", "opened", "subject"],
            (
                [
                    str(o.alert_id),
                    o.severity,
                    words(o.state),
                    o.kind,
                    moment(o.opened_at),
                    o.subject,
                ]
                for o in report.open_alerts
            ),
            {0},
            frozenset({5}),
        ),
    ]
