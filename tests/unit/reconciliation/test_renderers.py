"""Every report format drawn from one hand-built report: exact numbers, no external assets."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from reconciliation.reports import ReportError, render
from reconciliation.reports.charts import lines_over_time, stacked_bars
from reconciliation.reports.model import (
    Ageing,
    AlertCount,
    DriftPoint,
    HoldingDrift,
    HoldingName,
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
        names={HOLDING: HoldingName(account_number="0123456789", account_name="Ada Obi")},
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


def test_csv_is_one_long_table() -> None:
    rows = list(csv.DictReader(io.StringIO(render(report(), "csv"))))
    credits = [r for r in rows if r["metric"] == "credits_minor"]
    assert credits[0]["value"] == "9007199254740993"
    by_metric = {r["metric"]: r["value"] for r in rows if r["section"] in ("totals", "summary")}
    assert by_metric["transfers_refused_minor"] == "10000000000"
    assert by_metric["transfers_settled_count"] == "1"
    assert by_metric["unmatched"] == "4"
    assert by_metric["accepted_count"] == by_metric["accepted"] == "2"
    assert {r["metric"] for r in rows if r["section"] == "legend"} >= {"waiting", "exceptions"}
    assert {"8-30 days:notification", "0-1 days:posting"} <= {r["metric"] for r in rows}


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
    assert "No exceptions" in html and "No balance checked yet" in html
    text = render(empty, "text")
    assert "Exceptions by age: none." in text and "Unmatched items: none." in text


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
    one_point = lines_over_time("t", [("h", [(NOW, 5)])])
    assert "<circle" in one_point and "NaN" not in one_point


def test_a_format_not_offered_is_refused_naming_those_that_are() -> None:
    with pytest.raises(ReportError, match=r"format 'xml' is not one of text, json, csv, html$"):
        render(report(), "xml")
