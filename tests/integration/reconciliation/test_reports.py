"""The report query on both databases, and every format rendered from it."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from decimal import Decimal

import pytest
from sqlalchemy.orm import Session, sessionmaker

from app.report_formats import FORMATS, render
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.reports import ReportError, ReportWindow, build_report
from tests.integration.reconciliation.builders import Store, at

DAY = 86_400
POLICY = ReconcilePolicy(notification_grace_seconds=300, projection_grace_seconds=60)


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


def build(store: Store) -> dict[str, object]:
    dest, source = store.holding(), store.holding(locator=False)
    credit = store.posting(dest, 2_500, posted=at(-DAY))
    store.notification(
        "PAYMENT_RECEIVED", dest, 2_500, receipt=credit.receipt_ref, occurred=at(-DAY)
    )
    store.posting(dest, 1_234, posted=at(-10 * DAY))  # unmatched, 10 days old
    store.notification("PAYMENT_RECEIVED", dest, 999, receipt=uuid.uuid4(), occurred=at(-40 * DAY))
    twice = store.posting(dest, 700, posted=at(-3600))  # an exception, hours old
    store.notification("PAYMENT_RECEIVED", dest, 700, receipt=twice.receipt_ref, occurred=at(-3600))
    store.notification("PAYMENT_RECEIVED", dest, 700, receipt=twice.receipt_ref, occurred=at(-3600))
    transfer = store.transfer(source, dest, 10_000, requested=at(-2 * DAY))
    _, _, receipt = store.settle(transfer, source, dest, posted=at(-2 * DAY))
    store.notification(
        "TRANSACTION_COMPLETED",
        source,
        10_000,
        transfer=transfer,
        receipt=receipt,
        occurred=at(-2 * DAY),
    )
    store.snapshot(source, -10_000, observed=at(-600))
    run_pass(store.factory, POLICY, now=at(-400), publish=False)
    store.snapshot(source, -9_000, observed=at(-300))  # drifts by +1,000
    run_pass(store.factory, POLICY, now=at(0), publish=False)
    return {"dest": dest, "source": source}


def test_report_totals_ageing_alerts_and_drift(store: Store) -> None:
    known = build(store)
    with store.factory() as s:
        report = build_report(s, ReportWindow(until=at(60), since=at(-30 * DAY)), grace_seconds=300)

    by_holding = {t.holding_ref: t for t in report.totals}
    dest = by_holding[str(known["dest"].holding_ref)]  # type: ignore[attr-defined]
    assert (dest.posted_count, dest.credits_minor, dest.debits_minor) == (4, 14_434, 0)
    assert (dest.notified_count, dest.notified_minor) == (3, 3_900)  # the 40-day-old one is outside
    source = by_holding[str(known["source"].holding_ref)]  # type: ignore[attr-defined]
    assert source.debits_minor == 10_000
    assert (source.transfers["settled"].count, source.transfers["settled"].amount_minor) == (
        1,
        10_000,
    )
    assert source.transferred_count == 1
    assert source.unmatched_count == 0

    # Exceptions are items of the window: the 40-day-old notification is before --since.
    counts = report.ageing.counts
    assert counts["0-1"] == {"posting": 1, "notification": 2}
    assert counts["8-30"] == {"posting": 1}
    assert counts["over 30"] == {}
    assert counts["2-7"] == {}
    assert report.ageing.total == 4
    assert report.figures()["exceptions"] == 4
    assert [e.amount_minor for e in report.open_items] == [1_234, 700, 700, 700]

    kinds = {a.kind: a for a in report.alerts}
    assert kinds["balance_mismatch"].opened == 1
    assert {
        "ambiguous_match",
        "posting_without_notification",
        "notification_without_posting",
    } <= set(kinds)

    [drifting] = [d for d in report.drift if d.drift_minor]
    assert (drifting.settled_minor, drifting.posted_minor, drifting.drift_minor) == (
        -9_000,
        -10_000,
        1_000,
    )
    assert [p.drift_minor for p in drifting.series] == [0, 1_000]


def test_a_holding_filter_narrows_every_section(store: Store) -> None:
    known = build(store)
    ref = str(known["source"].holding_ref)  # type: ignore[attr-defined]
    with store.factory() as s:
        report = build_report(s, ReportWindow(until=at(60), holding=ref), grace_seconds=300)
    assert {t.holding_ref for t in report.totals} == {ref}
    assert report.ageing.total == 0
    assert [d.holding_ref for d in report.drift] == [ref]


def test_bad_windows_and_holdings_are_refused_with_a_reason(store: Store) -> None:
    with store.factory() as s:
        with pytest.raises(ReportError, match="must be before"):
            build_report(s, ReportWindow(until=at(0), since=at(10)))
        with pytest.raises(ReportError, match="no holding matches 'nope'"):
            build_report(s, ReportWindow(until=at(0), holding="nope"))
        with pytest.raises(ReportError, match="no holding matches"):
            build_report(s, ReportWindow(until=at(0), holding=str(uuid.uuid4())))


def test_every_format_renders_the_same_report(store: Store) -> None:
    build(store)
    with store.factory() as s:
        report = build_report(s, ReportWindow(until=at(60)), grace_seconds=300)
    rendered = {fmt: render(report, fmt) for fmt in FORMATS}

    data = json.loads(rendered["json"])
    assert data["openExceptions"]["total"] == 5
    assert data["summary"]["exceptions"] == 5
    assert data["openItems"]["total"] == data["openItems"]["listed"] == 5

    items = list(csv.DictReader(io.StringIO(rendered["csv"])))
    assert len(items) == 5 and {i["state"] for i in items} == {"exception"}
    drift = list(csv.DictReader(io.StringIO(render(report, "csv", section="drift"))))
    assert [Decimal(r["drift"]) for r in drift if r["drift_minor"] != "0"] == [Decimal("10.00")]

    assert "Exceptions by age (5)" in rendered["text"]
    assert "+10.00 NGN" in rendered["text"]  # the drift, in major units for people

    html = rendered["html"]
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert html.count("<svg") == 2 and "<polyline" in html and "<rect" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"https?://", html)
    assert "<script" not in html and "<link" not in html
