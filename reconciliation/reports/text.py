"""Plain text for a terminal or an e-mail: Rich tables, rendered without colour to a string.

Every amount goes through `foundation.money.format_money`, every time through
`foundation.readable.moment`, every state through `words`; holdings show their account number
and name when the store has them. `width` is the terminal's width when there is one (Rich then
wraps long cells inside their column); without it the text takes its natural width, so a pipe
or a file gets every value whole.

Every value comes from the provider or the store, and some of it (ids, references, narrations,
subjects) was chosen by whoever sent it. Rich reads `[...]` in a string as markup: an id with
`[/]` in it made the whole report fail, and `[link=...]` put a hyperlink in an operator's
terminal. So the console reads no markup and no emoji codes at all (nothing here uses them),
and each cell goes through `foundation.printable`, which shows control characters as escapes
instead of sending them to the terminal.
"""

from __future__ import annotations

import io
from typing import Any, Final

from rich import box
from rich.console import Console
from rich.table import Table

from foundation.money import format_money
from foundation.printable import printable
from foundation.readable import moment, words
from reconciliation.reports.legend import grace_words, legend
from reconciliation.reports.model import (
    AGEING_BUCKETS,
    STREAMS,
    TRANSFER_OUTCOMES,
    Report,
)

#: Width used when none is given: wider than any row the report draws, so nothing is cut.
NATURAL_WIDTH: Final = 1_000

#: Figure name -> how it reads in the text and HTML summary.
FIGURE_LABELS: Final = {
    "holdings": "holdings",
    "items": "items in the window",
    "matched": "matched",
    "unmatched": "unmatched (waiting + exceptions)",
    "waiting": "  waiting",
    "exceptions": "  exceptions",
    "transfersSettled": "transfers settled",
    "transfersInFlight": "transfers in flight",
    "transfersRefused": "transfers refused",
    "transfersFailed": "transfers failed",
    "openAlerts": "alerts open now",
    "alertsOpened": "alerts opened in the window",
    "alertsResolved": "alerts resolved in the window",
    "holdingsDrifting": "holdings whose balance drifts",
}


def drift_note(drift_minor: int, explained_by_lag: bool) -> str:
    if explained_by_lag:
        return "projection lag"
    return "" if drift_minor == 0 else "DRIFT"


def window_line(report: Report) -> str:
    window = report.window
    since = moment(window.since) if window.since else "the beginning"
    scope = f"holding {report.holding_label(window.holding_ref)}" if window.holding_ref else ""
    return f"{since} to {moment(window.until)}" + (f", {scope}" if scope else ", all holdings")


def audit_sentence(report: Report) -> str:
    """The last ledger audit and when it finished, or that none has run yet."""
    found = report.last_audit
    if found is None:
        return report.audit_line()
    return f"{found.line()}; finished {moment(found.finished_at)}"


class _DataTable(Table):
    """A Rich table whose cells are data: every cell is made printable as it is added."""

    def add_row(self, *cells: object, **options: Any) -> None:
        super().add_row(*(None if c is None else printable(str(c)) for c in cells), **options)


def _table(title: str, headers: tuple[str, ...], numeric: set[int]) -> Table:
    table = _DataTable(
        title=printable(title), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for index, header in enumerate(headers):
        table.add_column(printable(header), justify="right" if index in numeric else "left")
    return table


def _console(out: io.StringIO, width: int | None) -> Console:
    """A console for data: no markup, no emoji codes, no highlighting, no colour."""
    return Console(
        file=out,
        width=width or NATURAL_WIDTH,
        color_system=None,
        force_terminal=False,
        markup=False,
        emoji=False,
        highlight=False,
    )


def render_text(report: Report, width: int | None = None) -> str:
    out = io.StringIO()
    console = _console(out, width)
    console.print("Reconciliation report")
    console.print(printable(window_line(report)))
    console.print(
        f"Generated {moment(report.generated_at)}; "
        f"notification grace {grace_words(report.grace_seconds)}"
    )
    console.print(printable(audit_sentence(report)))
    console.print()
    summary = _table("Figures", ("figure", "count"), {1})
    for name, value in report.figures().items():
        summary.add_row(FIGURE_LABELS.get(name, name), f"{value:,}")
    console.print(summary)
    console.print("What the figures count:")
    for term, definition in legend(report.grace_seconds):
        console.print(f"  {term}: {definition}")
    console.print()
    _items_by_holding(console, report)
    _fees(console, report)
    _open_items(console, report)
    _ageing(console, report)
    _alerts(console, report)
    _drift(console, report)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _items_by_holding(console: Console, report: Report) -> None:
    if not report.totals:
        console.print("Items by holding: none in the window.")
        console.print()
        return
    items = _table(
        "Items by holding and unit",
        ("holding", "unit", "items", "matched", "waiting", "exceptions", "posted", "net posted"),
        {2, 3, 4, 5, 6, 7},
    )
    for t in report.totals:
        items.add_row(
            report.holding_label(t.holding_ref),
            t.currency,
            f"{t.items:,}",
            f"{t.matched_count:,}",
            f"{t.waiting_count:,}",
            f"{t.exception_count:,}",
            f"{t.posted_count:,}",
            format_money(t.posted_minor, t.currency),
        )
    console.print(items)
    money_table = _table(
        "Notified and transferred, by outcome",
        ("holding", "unit", "notified", *(words(o) for o in TRANSFER_OUTCOMES)),
        {2, 3, 4, 5, 6},
    )
    for t in report.totals:
        money_table.add_row(
            report.holding_label(t.holding_ref),
            t.currency,
            f"{t.notified_count} / {format_money(t.notified_minor, t.currency)}",
            *(
                f"{t.transfers[o].count} / {format_money(t.transfers[o].amount_minor, t.currency)}"
                for o in TRANSFER_OUTCOMES
            ),
        )
    console.print(money_table)


def _fees(console: Console, report: Report) -> None:
    if not report.fees:
        console.print("Fees: none charged on settled transfers.")
        console.print()
        return
    table = _table(
        "Fees of settled transfers, by kind and bearer",
        ("holding", "unit", "kind", "bearer", "transfers", "fees", "unknown"),
        {4, 5, 6},
    )
    for f in report.fees:
        table.add_row(
            report.holding_label(f.holding_ref),
            f.currency,
            f.kind,
            f.bearer,
            f"{f.count:,}",
            format_money(f.amount_minor, f.currency),
            f"{f.unknown_count:,}",
        )
    console.print(table)


def _open_items(console: Console, report: Report) -> None:
    total = report.figures()["unmatched"]
    if not total:
        console.print("Unmatched items: none.")
        console.print()
        return
    listed = len(report.open_items)
    shown = f"{total}" if listed == total else f"{total}, the oldest {listed} listed"
    table = _table(
        f"Unmatched items ({shown})",
        ("state", "stream", "id", "holding", "amount", "since", "why", "reference"),
        {2, 4},
    )
    for e in report.open_items:
        table.add_row(
            words(e.state),
            e.stream,
            str(e.item_id),
            report.holding_label(e.holding_ref),
            format_money(e.amount_minor, e.currency),
            moment(e.since),
            e.why,
            e.reference,
        )
    console.print(table)


def _ageing(console: Console, report: Report) -> None:
    if not report.ageing.total:
        console.print("Exceptions by age: none.")
        console.print()
        return
    ageing = _table(
        f"Exceptions by age ({report.ageing.total})",
        ("days", *(f"{s}s" for s in STREAMS), "amount"),
        {1, 2, 3, 4},
    )
    for label, _, _ in AGEING_BUCKETS:
        counts = report.ageing.counts.get(label, {})
        amounts = report.ageing.amounts.get(label, {})
        ageing.add_row(
            label,
            *(str(counts.get(s, 0)) for s in STREAMS),
            ", ".join(format_money(a, c) for c, a in sorted(amounts.items())) or "-",
        )
    console.print(ageing)


def _alerts(console: Console, report: Report) -> None:
    if report.alerts:
        table = _table("Alerts in the window", ("kind", "severity", "opened", "resolved"), {2, 3})
        for a in report.alerts:
            table.add_row(a.kind, a.severity, str(a.opened), str(a.resolved))
        console.print(table)
    else:
        console.print("Alerts in the window: none.")
        console.print()
    if not report.open_alert_count:
        console.print("Alerts open now: none.")
        console.print()
        return
    listed = len(report.open_alerts)
    count = report.open_alert_count
    shown = f"{count}" if listed == count else f"{count}, the {listed} most urgent listed"
    still = _table(
        f"Alerts open now ({shown})", ("id", "severity", "state", "kind", "opened", "subject"), {0}
    )
    for o in report.open_alerts:
        still.add_row(
            str(o.alert_id), o.severity, words(o.state), o.kind, moment(o.opened_at), o.subject
        )
    console.print(still)


def _drift(console: Console, report: Report) -> None:
    if not report.drift:
        console.print("Balance drift: no balance checked yet.")
        return
    drift = _table(
        "Balance against postings, per holding (latest check)",
        ("holding", "checked", "balance", "postings sum", "drift", "note"),
        {2, 3, 4},
    )
    for d in report.drift:
        drift.add_row(
            report.holding_label(d.holding_ref),
            moment(d.observed_at),
            format_money(d.settled_minor, d.currency),
            format_money(d.posted_minor, d.currency),
            format_money(d.drift_minor, d.currency, signed=True),
            drift_note(d.drift_minor, d.explained_by_lag),
        )
    console.print(drift)
