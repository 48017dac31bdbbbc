"""The report's figures are true: each equals the count of the items the report lists under it.

On the demo's business day (built row by row, both databases) the figures are checked against
what the test knows it built: two transfers settled, one in flight, one refused, the dropped
webhook's posting as the one exception, the four open alerts. On generated stores (hypothesis)
every figure is checked against the items the report lists, in every format, and against the
rows the story wrote.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.report_formats import render
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.reports import ReportWindow, build_report
from reconciliation.reports.model import AGEING_BUCKETS, Report
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Alert, Base
from tests.integration.reconciliation.builders import Store, at
from tests.integration.reconciliation.report_stores import (
    DAY,
    Story,
    build_story,
    demo_day,
    stories,
)

GRACE = 300
POLICY = ReconcilePolicy(
    notification_grace_seconds=GRACE, projection_grace_seconds=60, finality_deadline_seconds=600
)


def agree(report: Report) -> None:
    """Every figure equals the count of what the report lists under it, in every format."""
    figures = report.figures()
    assert figures["items"] == figures["matched"] + figures["unmatched"]
    assert figures["unmatched"] == figures["waiting"] + figures["exceptions"]
    listed = Counter(item.state for item in report.open_items)
    assert len(report.open_items) == figures["unmatched"]  # stores here are below the limit
    assert listed["waiting"] == figures["waiting"]
    assert listed["exception"] == figures["exceptions"]
    for totals in report.totals:
        under = [i for i in report.open_items if i.holding_ref == totals.holding_ref]
        under = [i for i in under if i.currency == totals.currency]
        assert totals.unmatched_count == len(under)
        assert totals.exception_count == sum(1 for i in under if i.state == "exception")
    assert report.ageing.total == figures["exceptions"]
    for label, first, last in AGEING_BUCKETS:
        in_bucket = [
            i
            for i in report.open_items
            if i.state == "exception"
            and first <= i.age_days
            and (last is None or i.age_days <= last)
        ]
        by_stream = Counter(i.stream for i in in_bucket)
        assert report.ageing.counts[label] == dict(by_stream)
    assert figures["openAlerts"] == len(report.open_alerts)

    data = json.loads(render(report, "json"))
    assert data["summary"] == figures
    assert data["openItems"]["total"] == data["openItems"]["listed"] == figures["unmatched"]
    assert data["openExceptions"]["total"] == figures["exceptions"]
    rows = csv.DictReader(io.StringIO(render(report, "csv", section="summary")))
    assert {r["figure"]: int(r["value"]) for r in rows} == figures
    items = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    assert len(items) == figures["unmatched"]
    assert Counter(i["state"] for i in items) == Counter(i.state for i in report.open_items)
    for fmt in ("text", "html"):
        rendered = render(report, fmt)
        assert "unmatched (waiting + exceptions)" in rendered
        assert "waiting + exceptions" in rendered  # the legend travels with the figures


def test_the_demo_day_reports_what_happened(session_factory: sessionmaker[Session]) -> None:
    store = Store(session_factory)
    day = demo_day(store)
    run_pass(session_factory, POLICY, now=at(0), publish=False)
    with session_factory() as s:
        report = build_report(
            s,
            ReportWindow(until=at(60)),
            grace_seconds=GRACE,
            finality_seconds=POLICY.finality_deadline_seconds,
        )
    agree(report)

    treasury = next(t for t in report.totals if t.holding_ref == str(day.treasury.holding_ref))
    got = {o: (t.count, t.amount_minor) for o, t in treasury.transfers.items()}
    assert got == {
        "settled": (2, 1_250_000),
        "in_flight": (1, 5_000),
        "refused": (1, 10_000_000_000),
        "failed": (0, 0),
    }
    figures = report.figures()
    assert (figures["transfersSettled"], figures["transfersRefused"]) == (2, 1)
    # The dropped webhook's posting and the stuck transfer are the exceptions: the transfer
    # is late by the very definition its finality_overdue alert uses, never "waiting" beside it.
    exceptions = {
        (i.stream, i.reference): i.why for i in report.open_items if i.state == "exception"
    }
    assert exceptions == {
        ("posting", str(day.dropped_receipt)): "no notification within the grace",
        ("transfer", str(day.stuck_ref)): "late: still in flight past its finality deadline",
    }
    assert [i for i in report.open_items if i.state == "waiting"] == []
    assert figures["openAlerts"] == 4
    assert {a.kind for a in report.open_alerts} == {
        "posting_without_notification",
        "amount_mismatch",
        "delivery_body_conflict",
        "finality_overdue",
    }
    subjects = {a.kind: a.subject for a in report.open_alerts}
    assert "credit of 777.00 NGN on holding" in subjects["posting_without_notification"]
    assert "says amount 150.01 NGN, its posting says 150.00 NGN" in subjects["amount_mismatch"]
    assert (
        "still awaiting finality past its finality deadline (2026-" in subjects["finality_overdue"]
    )

    text = render(report, "text")
    assert "1 / 100,000,000.00 NGN" in text  # refused, on its own
    assert "100,012,550.00" not in text  # never added to what moved
    assert str(store.numbers[day.treasury.id]) in text  # holdings by account number
    html = render(report, "html")
    assert html.count("<svg") == 1  # the exceptions chart has its bar; no drift to draw

    # A later report on the same store, nothing new: the same items, in the same states.
    with session_factory() as s:
        later = build_report(
            s,
            ReportWindow(until=at(2 * DAY)),
            grace_seconds=GRACE,
            finality_seconds=POLICY.finality_deadline_seconds,
        )
    agree(later)
    for name in ("items", "matched", "waiting", "exceptions", "openAlerts"):
        assert later.figures()[name] == figures[name], name
    assert later.ageing.counts["2-7"] == {"posting": 1, "transfer": 1}  # aged, stayed two


def test_an_item_moves_from_waiting_to_exception_to_matched(
    session_factory: sessionmaker[Session],
) -> None:
    store = Store(session_factory)
    holding = store.holding()
    posting = store.posting(holding, 4_200, posted=at(0))
    run_pass(session_factory, POLICY, now=at(10), publish=False)

    def state_at(seconds: float) -> str:
        with session_factory() as s:
            report = build_report(s, ReportWindow(until=at(seconds)), grace_seconds=GRACE)
        agree(report)
        states = [i.state for i in report.open_items]
        return states[0] if states else "matched"

    assert state_at(GRACE - 1) == "waiting"
    assert state_at(GRACE + 1) == "exception"
    store.notification("PAYMENT_RECEIVED", holding, 4_200, receipt=posting.receipt_ref)
    run_pass(session_factory, POLICY, now=at(GRACE + 5), publish=False)
    assert state_at(GRACE + 10) == "matched"


# --- generated stores --------------------------------------------------------------------


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def fresh_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """A maker of empty stores, one per generated example (hypothesis runs many per test)."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        folder = tmp_path_factory.mktemp("stories")

        def make() -> sessionmaker[Session]:
            path = folder / f"{uuid.uuid4().hex}.db"
            shutil.copyfile(template, path)
            return make_session_factory(make_engine(f"sqlite:///{path}"))

        yield make
        return
    url: str = request.getfixturevalue("postgres_template_url")
    engine = make_engine(url)
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)

    def empty() -> sessionmaker[Session]:
        with engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        return make_session_factory(engine)

    yield empty
    engine.dispose()


@settings(
    max_examples=25,
    database=None,  # nothing written into the checkout; failures print their example
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(story=stories())
def test_every_figure_counts_what_the_report_lists(fresh_factory: object, story: Story) -> None:
    factory: sessionmaker[Session] = fresh_factory()  # type: ignore[operator]
    store = Store(factory)
    written = build_story(store, story)
    policy = ReconcilePolicy(notification_grace_seconds=story.grace, projection_grace_seconds=60)
    if story.run_pass:
        run_pass(factory, policy, now=at(0), publish=False)
    until = at(story.until_offset)
    since = at(-story.since_days * DAY) if story.since_days is not None else None
    with factory() as s:
        report = build_report(
            s,
            ReportWindow(until=until, since=since),
            grace_seconds=story.grace,
            finality_seconds=policy.finality_deadline_seconds,
        )
        alerts_open = s.scalar(
            select(func.count())
            .select_from(Alert)
            .where(Alert.state.in_(("open", "acknowledged")), Alert.opened_at < until)
        )
    agree(report)
    figures = report.figures()

    # Against what the story wrote: the items of the window, and transfers by outcome.
    def in_window(age: int) -> bool:
        moment = at(-age)
        return moment < until and (since is None or moment >= since)

    mine = [w for w in written if in_window(w.age)]
    assert figures["items"] == len(mine)
    outcomes = Counter(w.outcome for w in mine if w.stream == "transfer")
    assert figures["transfersSettled"] == outcomes["settled"]
    assert figures["transfersInFlight"] == outcomes["in_flight"]
    assert figures["transfersRefused"] == outcomes["refused"]
    assert figures["transfersFailed"] == outcomes["failed"]
    assert figures["openAlerts"] == alerts_open
    # Pass or no pass: a refused transfer is matched (it needs nothing), one in flight waits
    # until its finality deadline and is late, an exception, past it (what finality_overdue
    # says of it).
    deadline = timedelta(seconds=policy.finality_deadline_seconds)
    listed = {(i.stream, i.reference): i for i in report.open_items}

    def overdue(age: int) -> bool:
        return until - at(-age) > deadline

    for w in mine:
        if w.outcome == "refused":
            assert ("transfer", w.reference) not in listed
        if w.outcome == "in_flight":
            state = "exception" if overdue(w.age) else "waiting"
            assert listed[("transfer", w.reference)].state == state
    if not story.run_pass:
        # No pass has matched anything: only refused transfers are matched, and an item is an
        # exception exactly when it is older than the grace at `until`.
        late = timedelta(seconds=story.grace)
        expected = Counter(
            "matched"
            if w.outcome == "refused"
            else "waiting"
            if (w.outcome == "in_flight" and not overdue(w.age))
            or (w.outcome != "in_flight" and until - at(-w.age) < late)
            else "exception"
            for w in mine
        )
        assert (figures["matched"], figures["waiting"], figures["exceptions"]) == (
            expected["matched"],
            expected["waiting"],
            expected["exception"],
        )
