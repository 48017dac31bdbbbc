"""The report's sections as one data shape, built once: JSON, CSV, text and HTML each render it.

A `Section` (`reconciliation.reports.tables`) is a titled table: typed columns and rows of
typed cells (a count, an amount with its unit, a moment, a holding, a machine name). What a
section holds, its title, its columns and the sentence it reads as when empty are decided here
(for the figures, the window, the audit and the legend, in
`reconciliation.reports.context_sections`) and nowhere else; a renderer only decides how a cell
of each kind looks in its format:

- text and HTML, for people: amounts through `format_money`, moments through `moment`, holdings
  by `HoldingIdentity.label` (HTML puts the holdingRef in a title attribute), names as words;
- CSV, for spreadsheets: amounts as plain major-unit decimals (`Decimal` reads them exactly)
  with the exact minor units beside them, moments in ISO 8601, holdings as three columns
  (account number, name, holdingRef), names as they are;
- JSON, for programs (`reconciliation.reports.wire`): each column with a `json` key, amounts as
  strings of minor-unit digits, a unit with its exponent, a holding as three keys.

Columns marked `people=False` are CSV-only (an amount's unit in its own column, credits and
debits apart, the meaning of a figure), `machines=False` ones text and HTML only; sections
marked `people=False` are CSV-only too (the window, the last audit and the legend, which text
and HTML write as sentences instead). Columns made with `json_only` are JSON's alone: what
the other formats say another way (a drift's note is JSON's `explainedByLag`) or not at all.
"""

from __future__ import annotations

from typing import Final

from reconciliation.reports.context_sections import (
    SUMMARY,
    audit,
    legend_section,
    summary,
    window,
)
from reconciliation.reports.model import AGEING_BUCKETS, STREAMS, TRANSFER_OUTCOMES, Report
from reconciliation.reports.tables import (
    AMOUNTS,
    COUNT,
    COUNTED,
    MOMENT,
    MONEY,
    NAME,
    POINTS,
    Cell,
    Column,
    Counted,
    Money,
    Section,
    count_column,
    holding_column,
    json_only,
    money_column,
    unit_column,
)


def ageing(report: Report) -> Section:
    total = report.ageing.total
    rows: tuple[tuple[Cell, ...], ...] = (
        tuple(
            (
                label,
                *(report.ageing.counts.get(label, {}).get(s, 0) for s in STREAMS),
                tuple(
                    Money(amount, unit)
                    for unit, amount in sorted(report.ageing.amounts.get(label, {}).items())
                ),
            )
            for label, _, _ in AGEING_BUCKETS
        )
        if total
        else ()
    )
    return Section(
        key="ageing",
        title=f"Exceptions by age ({total:,})" if total else "Exceptions by age",
        columns=(
            Column("days", "days"),
            *(count_column(f"{s}s") for s in STREAMS),
            Column("amount", "amount", AMOUNTS, numeric=True),
        ),
        rows=rows,
        empty="Exceptions by age: none, nothing needs a person.",
    )


def open_items(report: Report) -> Section:
    """The unmatched items one by one: what a person works through."""
    total = report.figures()["unmatched"]
    listed = len(report.open_items)
    shown = f"{total:,}" if listed == total else f"{total:,}, the oldest {listed:,} listed"
    return Section(
        key="items",
        title=f"Unmatched items ({shown})",
        columns=(
            Column("kind", "kind", NAME, json="stream"),
            Column("id", "id", numeric=True, json="id"),
            holding_column(),
            Column("reference", "reference", prose=True, json="reference"),
            money_column("amount", "amount", "amountMinor"),
            unit_column(people=False),
            # Debit or credit on the holding: a spreadsheet sums money in and out apart.
            Column("side", "side", NAME, people=False),
            Column("time", "since", MOMENT, json="since"),
            Column("state", "state", NAME, json="state"),
            Column("why_listed", "why", prose=True, json="why"),
            json_only("ageDays", COUNT),
        ),
        rows=tuple(
            (
                e.stream,
                e.item_id,
                report.holding(e.holding_ref),
                e.reference,
                Money(e.amount_minor, e.currency),
                e.currency,
                e.side,
                e.since,
                e.state,
                e.why,
                e.age_days,
            )
            for e in report.open_items
        ),
        empty="Unmatched items: none, every item in the window is matched.",
    )


def drift_note(drift_minor: int, explained_by_lag: bool) -> str:
    if explained_by_lag:
        return "projection lag"
    return "" if drift_minor == 0 else "DRIFT"


def drift(report: Report) -> Section:
    return Section(
        key="drift",
        title="Balance against postings, per holding (latest check)",
        columns=(
            holding_column(),
            unit_column(people=False),
            Column("checked", "checked", MOMENT, json="observedAt"),
            money_column("balance", "balance", "settledMinor"),
            money_column("postings_sum", "postings sum", "postedMinor"),
            money_column("drift", "drift", "driftMinor"),
            Column("note", "note"),
            json_only("explainedByLag"),
            json_only("series", POINTS),
        ),
        rows=tuple(
            (
                report.holding(d.holding_ref),
                d.currency,
                d.observed_at,
                Money(d.settled_minor, d.currency),
                Money(d.posted_minor, d.currency),
                Money(d.drift_minor, d.currency, signed=True),
                drift_note(d.drift_minor, d.explained_by_lag),
                d.explained_by_lag,
                tuple(d.series),
            )
            for d in report.drift
        ),
        empty="Balance drift: no balance checked yet.",
    )


def totals(report: Report) -> Section:
    return Section(
        key="totals",
        title="Items by holding and unit",
        columns=(
            holding_column(),
            unit_column(),
            count_column("items", json="items"),
            count_column("matched", json="matchedCount"),
            count_column("accepted", json="acceptedCount"),
            count_column("waiting", json="waitingCount"),
            count_column("exceptions", json="exceptionCount"),
            count_column("postings", "posted", json="postedCount"),
            money_column("credits", "credits", "creditsMinor", people=False),
            money_column("debits", "debits", "debitsMinor", people=False),
            money_column("net_posted", "net posted", "postedMinor"),
            json_only("unmatchedCount", COUNT),
        ),
        rows=tuple(
            (
                report.holding(t.holding_ref),
                t.currency,
                t.items,
                *t.states.values(),  # matched, accepted, waiting, exceptions (ITEM_STATES)
                t.posted_count,
                Money(t.credits_minor, t.currency),
                Money(t.debits_minor, t.currency),
                Money(t.posted_minor, t.currency),
                t.unmatched_count,
            )
            for t in report.totals
        ),
        empty="Items by holding and unit: none in the window.",
    )


def camel(name: str) -> str:
    """'in_flight' -> 'inFlight': the JSON spelling of a snake_case name."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def transfers(report: Report) -> Section:
    """JSON writes these in each holding's `totals` entry (the same holdings, in the same
    order): `notifiedCount`, `notifiedMinor`, and `transfers` by outcome."""
    return Section(
        key="transfers",
        title="Notified and transferred, by outcome",
        columns=(
            holding_column(json=False),
            Column("currency", "unit"),
            Column("notified", "notified", COUNTED, numeric=True),
            *(
                Column(o, o.replace("_", " "), COUNTED, numeric=True, json=f"transfers.{camel(o)}")
                for o in TRANSFER_OUTCOMES
            ),
            json_only("notifiedCount", COUNT),
            json_only("notifiedMinor", MONEY),
        ),
        rows=tuple(
            (
                report.holding(t.holding_ref),
                t.currency,
                Counted(t.notified_count, Money(t.notified_minor, t.currency)),
                *(
                    Counted(t.transfers[o].count, Money(t.transfers[o].amount_minor, t.currency))
                    for o in TRANSFER_OUTCOMES
                ),
                t.notified_count,
                Money(t.notified_minor, t.currency),
            )
            for t in report.totals
        ),
        empty="Notified and transferred: nothing in the window.",
    )


def fees(report: Report) -> Section:
    return Section(
        key="fees",
        title="Fees of settled transfers, by kind and bearer",
        columns=(
            holding_column(),
            unit_column(),
            Column("kind", "kind", json="kind"),
            Column("bearer", "bearer", json="bearer"),
            count_column("transfers", json="count"),
            money_column("fees", "fees", "amountMinor"),
            count_column("unknown", json="unknownCount"),
        ),
        rows=tuple(
            (
                report.holding(f.holding_ref),
                f.currency,
                f.kind,
                f.bearer,
                f.count,
                Money(f.amount_minor, f.currency),
                f.unknown_count,
            )
            for f in report.fees
        ),
        empty="Fees: none charged on a settled transfer in the window.",
    )


def alerts(report: Report) -> Section:
    return Section(
        key="alerts",
        title="Alerts in the window",
        columns=(
            Column("kind", "kind", json="kind"),
            Column("severity", "severity", json="severity"),
            count_column("opened", json="opened"),
            count_column("resolved", json="resolved"),
        ),
        rows=tuple((a.kind, a.severity, a.opened, a.resolved) for a in report.alerts),
        empty="Alerts in the window: none opened or resolved.",
    )


def open_alerts(report: Report) -> Section:
    count, listed = report.open_alert_count, len(report.open_alerts)
    shown = f"{count:,}" if listed == count else f"{count:,}, the {listed} most urgent listed"
    return Section(
        key="open_alerts",
        title=f"Alerts open now ({shown})",
        columns=(
            Column("id", "id", numeric=True, json="id"),
            Column("severity", "severity", json="severity"),
            Column("state", "state", NAME, json="state"),
            Column("kind", "kind", json="kind"),
            Column("opened", "opened", MOMENT, json="openedAt"),
            Column("subject", "subject", prose=True, json="subject"),
            Column("acknowledged_by", "acknowledged by", json="acknowledgedBy"),
            Column("note", "note", prose=True, json="note"),
        ),
        rows=tuple(
            (
                o.alert_id,
                o.severity,
                o.state,
                o.kind,
                o.opened_at,
                o.subject,
                o.acknowledged_by,
                o.note,
            )
            for o in report.open_alerts
        ),
        empty="Alerts open now: none.",
    )


def holdings(report: Report) -> Section:
    """Every holding the report names, with its holdingRef: where text finds the reference."""
    return Section(
        key="holdings",
        title="Holdings in this report",
        columns=(
            holding_column(json=False),
            Column("unit", "unit"),
            # CSV has the holdingRef already, as the holding's third column.
            Column("reference", "holdingRef", machines=False),
        ),
        rows=tuple(
            (h, h.currency or "", h.ref)
            for h in sorted(report.holdings.values(), key=lambda h: (h.label, h.ref))
        ),
        empty="Holdings: none in this report.",
    )


#: Every section, in the order text and HTML draw them (the ones needing a person first).
BUILDERS: Final = {
    SUMMARY: summary,
    "items": open_items,
    "ageing": ageing,
    "drift": drift,
    "totals": totals,
    "transfers": transfers,
    "fees": fees,
    "alerts": alerts,
    "open_alerts": open_alerts,
    "holdings": holdings,
    "window": window,
    "audit": audit,
    "legend": legend_section,
}

#: The section names a CSV may be asked for (`recon report --format csv --section NAME`).
SECTION_NAMES: Final = tuple(BUILDERS)

#: The CSV a spreadsheet gets when no section is named: one row per unmatched item.
DEFAULT_CSV_SECTION: Final = "items"


def build_sections(report: Report) -> list[Section]:
    """Every section of the report, built once."""
    return [build(report) for build in BUILDERS.values()]
