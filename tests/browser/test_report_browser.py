"""The HTML report as a person opens it, in Chromium on a 1,280 px laptop screen.

A report whose one wide row (a token holding, 18 decimals, in five amount columns) pushed the
page to 2,263 px hid the in-flight, refused and failed columns off screen; a drift chart showed
a dip while "holdings whose balance drifts" said 0. The report here is built by hand with both
(the renderer is the subject, not the store), opened in a real browser, and measured.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app.report_formats import render
from reconciliation.postings.holding_identity import HoldingIdentity
from reconciliation.reports.model import (
    DriftPoint,
    HoldingDrift,
    HoldingTotals,
    Report,
    ReportWindow,
    Tally,
)

#: The laptop screen the report must fit without scrolling sideways.
SCREEN_WIDTH = 1280
NOW = datetime(2026, 11, 29, 4, 40, tzinfo=UTC)
TOKEN = "token:ETH@ethereum"
#: An amount in a unit recon knows no decimals for: its longest way of being written.
WIDE = 12_500_000_000_000_000_001


def _holding(n: int, currency: str) -> HoldingIdentity:
    ref = f"6f1c2a34-0000-4000-8000-00000000000{n}"
    return HoldingIdentity(ref, f"{n:010d}", "SANDBOX CB4F8D10", holding_id=n, currency=currency)


def _report() -> Report:
    naira, token, lagging = _holding(1, "NGN"), _holding(2, TOKEN), _holding(3, "NGN")
    wide = Tally(2, WIDE)
    step = timedelta(minutes=5)
    return Report(
        window=ReportWindow(until=NOW, since=NOW - timedelta(days=1)),
        generated_at=NOW,
        totals=[
            HoldingTotals(
                holding_ref=naira.ref,
                currency="NGN",
                posted_count=9,
                credits_minor=47_425_770,
                notified_count=7,
                notified_minor=52_570_000,
                transfers={
                    "settled": Tally(6, 2_570_000),
                    "in_flight": Tally(1, 5_000),
                    "refused": Tally(1, 10_000_000_000),
                    "failed": Tally(0, 0),
                },
            ),
            HoldingTotals(
                holding_ref=token.ref,
                currency=TOKEN,
                posted_count=2,
                credits_minor=WIDE,
                notified_count=2,
                notified_minor=WIDE,
                transfers={"settled": wide, "in_flight": wide, "refused": wide, "failed": wide},
            ),
        ],
        drift=[
            # Drifted earlier in the window and cleared: not drift now.
            HoldingDrift(
                naira.ref,
                "NGN",
                NOW,
                100,
                100,
                0,
                False,
                [
                    DriftPoint(NOW - 2 * step, 0, False),
                    DriftPoint(NOW - step, -125_050, True),
                    DriftPoint(NOW, 0, False),
                ],
            ),
            # Apart now, and nothing in flight explains it: the one holding that drifts.
            HoldingDrift(
                lagging.ref,
                "NGN",
                NOW,
                900,
                1_000,
                -100,
                False,
                [DriftPoint(NOW - step, 0, False), DriftPoint(NOW, -100, False)],
            ),
        ],
        holdings={h.ref: h for h in (naira, token, lagging)},
    )


def test_the_html_report_fits_a_laptop_screen_and_its_drift_chart_agrees_with_its_figures(
    chromium: Any, screenshots: Path
) -> None:
    report = _report()
    html = render(report, "html")
    page = chromium.new_page(viewport={"width": SCREEN_WIDTH, "height": 900})
    page.set_content(html)
    page.screenshot(path=str(screenshots / "report-1280.png"), full_page=True)
    print(f"report screenshot: {screenshots / 'report-1280.png'}")

    assert page.evaluate("document.documentElement.scrollWidth") <= SCREEN_WIDTH
    # No table scrolls inside its own box either: every column is on screen.
    overflowing = page.evaluate(
        "[...document.querySelectorAll('div.table')]"
        ".filter(d => d.scrollWidth > d.clientWidth).map(d => d.previousElementSibling.innerText)"
    )
    assert overflowing == []
    outcome = page.locator("h2:text-is('Notified and transferred, by outcome') + div table")
    for column in ("in flight", "refused", "failed"):
        header = outcome.locator(f"th:text-is('{column}')")
        box = header.bounding_box()
        assert box is not None and box["x"] + box["width"] <= SCREEN_WIDTH, column

    # The drift chart and the figure say the same: one holding drifts now.
    figures = report.figures()
    assert figures["holdingsDrifting"] == 1
    summary = page.locator("h2:text-is('Figures') + div table")
    drifting = summary.locator("tr", has_text="holdings whose balance drifts").locator("td").last
    assert drifting.inner_text() == "1"
    note = page.locator("p.chart-note")
    assert note.get_attribute("data-drifting") == "1"
    assert note.inner_text().startswith("At the latest check 1 holding drift")
    chart = page.locator("svg", has=page.locator("title", has_text="Balance minus postings sum"))
    # The chart's last point per line, filled (drift) or hollow (explained): the lines still
    # away from zero and not explained at their last point are the holdings that drift now.
    lines = chart.locator("polyline").count()
    assert lines == 2
    points = chart.locator("circle")
    values = [
        (
            int(points.nth(i).get_attribute("data-value") or "0"),
            points.nth(i).get_attribute("data-explained"),
        )
        for i in range(points.count())
    ]
    last_points = [values[2], values[4]]  # three points, then two
    assert sum(1 for v, explained in last_points if v and explained == "0") == 1
    # The dip that transfers in flight explain is drawn hollow, never as drift.
    assert (-125_050, "1") in values
    # The legend names each holding whole (account number and name), not cut to fit.
    legend = [t for t in chart.locator("text").all_text_contents() if re.match(r"\d{10} ", t)]
    assert legend == ["0000000001 SANDBOX CB4F8D10", "0000000003 SANDBOX CB4F8D10"]
    page.close()
