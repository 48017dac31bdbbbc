"""Every report format drawn from one hand-built report: exact numbers, no external assets."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta

from reconciliation.reports import FORMATS, render
from reconciliation.reports.charts import lines_over_time, stacked_bars
from reconciliation.reports.model import (
    Ageing,
    AlertCount,
    DriftPoint,
    ExceptionItem,
    HoldingDrift,
    HoldingTotals,
    OpenAlert,
    Report,
    ReportWindow,
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
                matched_count=4,
                unmatched_count=1,
            )
        ],
        ageing=Ageing(
            counts={"0-1": {"posting": 2}, "2-7": {}, "8-30": {"notification": 1}, "over 30": {}},
            amounts={"0-1": {"NGN": 2_000}, "2-7": {}, "8-30": {"NGN": 500}, "over 30": {}},
            oldest=[
                ExceptionItem(
                    stream="notification",
                    item_id=7,
                    reference="evt-<script>alert(1)</script>",
                    holding_ref=HOLDING,
                    currency="NGN",
                    amount_minor=500,
                    since=NOW - timedelta(days=9),
                    age_days=9,
                    status="unmatched",
                )
            ],
        ),
        alerts=[AlertCount(kind="balance_mismatch", severity="critical", opened=2, resolved=1)],
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
    assert data["totals"][0]["creditsMinor"] == 9_007_199_254_740_993
    assert data["totals"][0]["postedMinor"] == 9_007_199_254_740_993 - 150_050
    assert data["openExceptions"]["total"] == 3
    assert data["balanceDrift"][0]["series"][1] == {
        "observedAt": (NOW - timedelta(hours=1)).isoformat(),
        "driftMinor": -50,
        "explainedByLag": True,
    }


def test_csv_is_one_long_table() -> None:
    rows = list(csv.DictReader(io.StringIO(render(report(), "csv"))))
    credits = [r for r in rows if r["metric"] == "credits_minor"]
    assert credits[0]["value"] == "9007199254740993"
    assert {"8-30 days:notification", "0-1 days:posting"} <= {r["metric"] for r in rows}


def test_text_shows_major_units_for_people() -> None:
    text = render(report(), "text")
    assert "1.00 NGN" in text  # the drift of 100 minor units
    assert "Open exceptions by age (3)" in text


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


def test_every_format_is_offered() -> None:
    assert set(FORMATS) == {"text", "json", "csv", "html"}
