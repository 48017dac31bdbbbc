"""Every report format drawn from one hand-built report: exact numbers, no external assets."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from app.report_formats import render
from app.report_formats.charts import lines_over_time, stacked_bars
from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports import ReportError
from reconciliation.reports.model import (
    Ageing,
    AlertCount,
    DriftPoint,
    FeeTotal,
    HoldingDrift,
    HoldingTotals,
    OpenAlert,
    OpenItem,
    Report,
    ReportWindow,
    Tally,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
HOLDING = "6f1c2a34-0000-4000-8000-000000000001"


def report() -> Report:
    return Report(
        window=ReportWindow(until=NOW, since=NOW - timedelta(days=7)),
        generated_at=NOW,
        totals=[
            HoldingTotals(
                holding_ref=HOLDING,
                currency="NGN",
                posted_count=3,
                credits_minor=9_007_199_254_740_993,  # beyond a float's exactness
                debits_minor=150_050,
                notified_count=2,
                notified_minor=150_050,
                transfers={
                    "settled": Tally(1, 150_050),
                    "in_flight": Tally(1, 5_000),
                    "refused": Tally(1, 10_000_000_000),
                    "failed": Tally(0, 0),
                },
                states={"matched": 4, "accepted": 2, "waiting": 1, "exception": 3},
            )
        ],
        ageing=Ageing(
            counts={"0-1": {"posting": 2}, "2-7": {}, "8-30": {"notification": 1}, "over 30": {}},
            amounts={"0-1": {"NGN": 2_000}, "2-7": {}, "8-30": {"NGN": 500}, "over 30": {}},
        ),
        open_items=[
            OpenItem(
                stream="notification",
                item_id=7,
                reference="evt-<script>alert(1)</script>",
                holding_ref=HOLDING,
                currency="NGN",
                amount_minor=500,
                since=NOW - timedelta(days=9),
                age_days=9,
                state="exception",
                why="no posting within the grace",
            )
        ],
        holdings={
            HOLDING: HoldingIdentity(
                ref=HOLDING, account_number="0123456789", account_name="Ada Obi", currency="NGN"
            )
        },
        alerts=[AlertCount(kind="balance_mismatch", severity="critical", opened=2, resolved=1)],
        open_alert_count=1,
        open_alerts=[
            OpenAlert(
                alert_id=1,
                kind="balance_mismatch",
                severity="critical",
                state="open",
                subject="drift <b>",
                opened_at=NOW,
                acknowledged_by="Ada",
                note="asked the provider",
            )
        ],
        drift=[
            HoldingDrift(
                holding_ref=HOLDING,
                currency="NGN",
                observed_at=NOW,
                settled_minor=1_100,
                posted_minor=1_000,
                drift_minor=100,
                explained_by_lag=False,
                series=[
                    DriftPoint(NOW - timedelta(hours=2), 0, False),
                    DriftPoint(NOW - timedelta(hours=1), -50, True),
                    DriftPoint(NOW, 100, False),
                ],
            )
        ],
    )


def test_json_keeps_money_exact() -> None:
    data = json.loads(render(report(), "json"))
    # Strings of digits: a JSON number past 2**53 is rounded by most readers.
    assert data["totals"][0]["creditsMinor"] == "9007199254740993"
    assert data["totals"][0]["postedMinor"] == str(9_007_199_254_740_993 - 150_050)
    assert (data["totals"][0]["currency"], data["totals"][0]["exponent"]) == ("NGN", 2)
    assert data["totals"][0]["transfers"]["refused"] == {
        "count": 1,
        "amountMinor": "10000000000",
    }
    assert data["totals"][0]["transfers"]["inFlight"]["count"] == 1
    assert data["totals"][0]["accountNumber"] == "0123456789"
    assert data["openExceptions"]["total"] == 3
    assert data["summary"]["unmatched"] == 4  # waiting 1 + exceptions 3
    assert (data["summary"]["accepted"], data["totals"][0]["acceptedCount"]) == (2, 2)
    assert set(data["legend"]) >= {"matched", "unmatched", "waiting", "exceptions", "openAlerts"}
    assert data["balanceDrift"][0]["series"][1] == {
        "observedAt": (NOW - timedelta(hours=1)).isoformat(),
        "driftMinor": "-50",
        "explainedByLag": True,
    }


def test_the_json_keeps_the_keys_programs_read() -> None:
    """The JSON's lists are written from the sections' columns (their `json` keys): the keys a
    program reads are pinned here, so no change to a section moves one."""
    built = report()
    built.fees = [FeeTotal(HOLDING, "NGN", "flat", "sender", 2, 5_000, 1)]
    data = json.loads(render(built, "json"))
    holding, unit = {"holdingRef", "accountNumber", "accountName"}, {"currency", "exponent"}
    assert set(data) == {
        *("generatedAt", "window", "graceSeconds", "legend", "summary", "lastAudit", "totals"),
        *("fees", "openItems", "openExceptions", "alerts", "balanceDrift"),
    }
    [totals] = data["totals"]
    assert set(totals) == holding | unit | {
        *("postedCount", "creditsMinor", "debitsMinor", "postedMinor", "notifiedCount"),
        *("notifiedMinor", "transfers", "items", "matchedCount", "acceptedCount"),
        *("unmatchedCount", "waitingCount", "exceptionCount"),
    }
    assert set(totals["transfers"]) == {"settled", "inFlight", "refused", "failed"}
    assert totals["notifiedMinor"] == "150050" and totals["unmatchedCount"] == 4
    [fee] = data["fees"]
    assert fee == {
        **{k: totals[k] for k in holding | unit},
        **{"kind": "flat", "bearer": "sender", "count": 2, "amountMinor": "5000"},
        "unknownCount": 1,
    }
    assert set(data["openItems"]) == {"total", "listed", "items"}
    [item] = data["openItems"]["items"]
    assert set(item) == holding | unit | {
        *("stream", "id", "reference", "amountMinor", "since", "ageDays", "state", "why"),
    }
    assert (item["id"], item["ageDays"], item["since"]) == (
        7,
        9,
        (NOW - timedelta(days=9)).isoformat(),
    )
    assert set(data["alerts"]) == {"byKind", "openTotal", "open"}
    assert data["alerts"]["byKind"] == [
        {"kind": "balance_mismatch", "severity": "critical", "opened": 2, "resolved": 1}
    ]
    [alert] = data["alerts"]["open"]
    assert set(alert) == {
        *("id", "kind", "severity", "state", "subject", "openedAt", "acknowledgedBy", "note"),
    }
    assert alert["id"] == 1
    [drift] = data["balanceDrift"]
    assert set(drift) == holding | unit | {
        *("observedAt", "settledMinor", "postedMinor", "driftMinor", "explainedByLag", "series"),
    }
    assert (drift["driftMinor"], drift["explainedByLag"]) == ("100", False)


def _csv(built: Report, section: str | None = None) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(render(built, "csv", section=section))))


def test_the_csv_of_items_is_one_row_per_item_a_spreadsheet_reads() -> None:
    text = render(report(), "csv")
    header = text.splitlines()[0].split(",")
    assert header[:11] == [
        "kind",
        "id",
        "holding_account_number",
        "holding_name",
        "holding_ref",
        "reference",
        "amount",
        "amount_minor",
        "currency",
        "side",
        "time",
    ]
    assert header[11:] == ["state", "why_listed"]
    [item] = _csv(report())
    assert (item["kind"], item["state"], item["why_listed"]) == (
        "notification",
        "exception",
        "no posting within the grace",
    )
    assert (item["holding_account_number"], item["holding_name"]) == ('="0123456789"', "Ada Obi")
    assert item["holding_ref"] == HOLDING
    assert Decimal(item["amount"]) == Decimal("5.00") and item["currency"] == "NGN"
    assert datetime.fromisoformat(item["time"]).replace(tzinfo=UTC) == NOW - timedelta(days=9)


def test_every_csv_section_is_a_table_of_its_own() -> None:
    built = report()
    summary = {r["figure"]: int(r["value"]) for r in _csv(built, "summary")}
    assert summary == built.figures()
    meaning = {r["figure"]: r["meaning"] for r in _csv(built, "summary")}
    assert meaning["unmatched"] == "waiting + exceptions"
    # Each figure says what it is, once; and what it counts, so transfers and alerts are never
    # summed with items.
    transfers = [meaning[f] for f in summary if f.startswith("transfers")]
    assert len(set(transfers)) == 4, transfers
    counts = {r["figure"]: r["counts"] for r in _csv(built, "summary")}
    assert (counts["items"], counts["transfersSettled"], counts["openAlerts"]) == (
        "items",
        "transfers",
        "alerts",
    )
    # Who owns each open alert, and their note.
    [alert] = _csv(built, "open_alerts")
    assert (alert["acknowledged_by"], alert["note"]) == ("Ada", "asked the provider")
    [totals] = _csv(built, "totals")
    # Major units exactly, past what a float holds; the minor units beside them.
    assert Decimal(totals["credits"]) == Decimal("90071992547409.93")
    assert totals["credits_minor"] == "9007199254740993"
    assert (totals["accepted"], totals["exceptions"]) == ("2", "3")
    [moved] = _csv(built, "transfers")
    assert (moved["refused_count"], moved["refused_amount"]) == ("1", "100000000.00")
    [drift] = _csv(built, "drift")
    assert (Decimal(drift["drift"]), drift["note"]) == (Decimal("1.00"), "DRIFT")
    ages = {r["days"]: r for r in _csv(built, "ageing")}
    assert (ages["8-30"]["notifications"], ages["8-30"]["amount"]) == ("1", "5.00 NGN")
    assert {r["term"] for r in _csv(built, "legend")} >= {"waiting", "exceptions"}
    window = {r["name"]: r["value"] for r in _csv(built, "window")}
    # Times as a spreadsheet reads a date and time: UTC to the second, no offset, no "T".
    assert window["until"] == "2026-11-22 12:00:00" and window["holding_ref"] == ""
    [item] = list(_csv(built, "items"))[:1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", item["time"]), item["time"]
    assert (window["items_unmatched"], window["items_listed"]) == ("4", "1")
    [holding] = _csv(built, "holdings")
    assert (holding["holding_ref"], holding["unit"]) == (HOLDING, "NGN")


def test_an_account_number_stays_text_in_a_spreadsheet_and_a_formula_stays_inert() -> None:
    """Issue #40: `0123456789` in a CSV cell is the number 123456789 to a spreadsheet. An
    account number of digits only is written `="0123456789"`, which spreadsheets read as the
    text 0123456789; anything else is never made a formula, and one that looks like a formula
    is still escaped (CSV injection)."""
    built = report()
    ada = built.holdings[HOLDING]
    built.scope = ada
    [item] = _csv(built)
    assert item["holding_account_number"] == '="0123456789"'
    window = {r["name"]: r["value"] for r in _csv(built, "window")}
    assert window["holding_account_number"] == '="0123456789"'
    for chosen, written in (
        ('=HYPERLINK("http://evil","x")', '\'=HYPERLINK("http://evil","x")'),
        ('0123"&HYPERLINK("http://evil")&"', '0123"&HYPERLINK("http://evil")&"'),
        ("\uff10\uff11", "\uff10\uff11"),  # fullwidth digits: not 0-9, left as they are
        (" 0123", "' 0123"),
        ("", ""),
    ):
        built.holdings[HOLDING] = replace(ada, account_number=chosen)
        [item] = _csv(built)
        assert item["holding_account_number"] == written, chosen


def test_a_csv_section_that_does_not_exist_is_refused_with_the_ones_that_do() -> None:
    with pytest.raises(ReportError, match="not one of summary, items"):
        render(report(), "csv", section="everything")
    with pytest.raises(ReportError, match="for CSV only"):
        render(report(), "text", section="items")


def test_csv_text_a_spreadsheet_would_run_is_written_as_text() -> None:
    built = report()
    built.holdings[HOLDING] = HoldingIdentity(
        ref=HOLDING, account_number="0123456789", account_name='=HYPERLINK("http://x")'
    )
    [item] = _csv(built)
    assert item["holding_name"] == '\'=HYPERLINK("http://x")'
    assert item["amount"] == "5.00"  # recon's own numbers are left alone


def test_a_unit_of_unknown_exponent_keeps_its_minor_units_in_csv() -> None:
    built = report()
    built.open_items[0] = replace(built.open_items[0], currency="XYZ", amount_minor=77_700)
    [item] = _csv(built)
    assert (item["amount"], item["amount_minor"], item["currency"]) == ("", "77700", "XYZ")


def test_text_shows_major_units_for_people() -> None:
    text = render(report(), "text")
    assert "+1.00 NGN" in text  # the drift of 100 minor units, signed
    assert "1 / 100,000,000.00 NGN" in text  # the refused transfer, on its own
    assert "Exceptions by age (3)" in text
    assert "0123456789 Ada Obi" in text  # the holding by its account, not its UUID
    assert "2026-11-22 12:00:00 UTC" in text
    assert "T12:00" not in text and "+00:00" not in text  # no ISO stamps for people
    assert "unmatched: waiting + exceptions" in text  # the legend travels with the figures
    assert "accepted without a counterpart" in text  # a decision, named apart from matches


def test_an_empty_report_reads_as_one_line_per_section() -> None:
    empty = Report(window=ReportWindow(until=NOW), generated_at=NOW)
    html = render(empty, "html")
    assert "<svg" not in html  # no chart frame around nothing
    assert "Exceptions by age: none" in html and "no balance checked yet" in html
    text = render(empty, "text")
    assert "Exceptions by age: none, nothing needs a person." in text
    assert "Unmatched items: none, every item in the window is matched." in text


def test_html_is_self_contained_and_escaped() -> None:
    html = render(report(), "html")
    assert not re.search(r"https?://|<script|<link|@import|url\(", html)
    assert "&lt;script&gt;" in html and "drift &lt;b&gt;" in html
    assert html.count("<svg") == 2
    assert "<polyline" in html  # the drift line
    assert html.count("<rect") >= 3  # bars and legend


def test_charts_survive_empty_data() -> None:
    empty_bars = stacked_bars("t", [("0-1", {}), ("2-7", {})], ("posting",))
    assert empty_bars.startswith("<svg") and "NaN" not in empty_bars
    assert "No drift in this window." in lines_over_time("t", [])
    one_point = lines_over_time("t", [("h", [(NOW, 5, False)])])
    assert "<circle" in one_point and "NaN" not in one_point


def test_a_format_not_offered_is_refused_naming_those_that_are() -> None:
    with pytest.raises(ReportError, match=r"format 'xml' is not one of text, json, csv, html$"):
        render(report(), "xml")


#: A provider-chosen name with what reorders, hides or drives a display: a right-to-left
#: override, a zero-width space, an escape sequence.
HOSTILE_NAME = "Ada\u202eevil\u200b\x1b[2J"


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("\uff1d1+1", "'\uff1d1+1"),  # a fullwidth equals sign: read as `=` by spreadsheets
        (" =1+1", "' =1+1"),  # a formula behind white space
        ("  Ada", "'  Ada"),  # a leading space kept visibly, not trimmed by a spreadsheet
        (HOSTILE_NAME, "Ada\\u202eevil\\u200b\\x1b[2J"),
    ],
)
def test_csv_cells_a_spreadsheet_would_run_or_reorder_are_written_inert(
    name: str, written: str
) -> None:
    """Before (third wave): a fullwidth `=` and leading-space cells went without the apostrophe,
    and bidi overrides, zero-width and ESC characters went into the CSV raw."""
    built = report()
    built.holdings[HOLDING] = HoldingIdentity(
        ref=HOLDING, account_number="0123456789", account_name=name
    )
    [item] = _csv(built)
    assert item["holding_name"] == written


def test_the_html_report_shows_bidi_zero_width_and_escape_characters_as_escapes() -> None:
    built = report()
    built.holdings[HOLDING] = HoldingIdentity(
        ref=HOLDING, account_number="0123456789", account_name=HOSTILE_NAME
    )
    html = render(built, "html")
    assert "\u202e" not in html and "\u200b" not in html and "\x1b" not in html
    assert "Ada\\u202eevil\\u200b\\x1b[2J" in html
