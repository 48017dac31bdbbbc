"""The console's exception queue counts and lists exactly what the report calls an exception.

`reconciliation.operator.exception_queue` reads only the unmatched branches (marked, backlog, above the
watermark) for speed; these tests hold it to the report's own figures on generated stores, on
both databases, and walk its cursors through pages that stop at their scan cap.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.operator.exception_queue import AGE_BUCKETS, STREAMS, counts, queue_page
from reconciliation.reports import ReportWindow, build_report
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Base
from tests.integration.reconciliation.builders import Store, at
from tests.integration.reconciliation.report_stores import Story, build_story, stories


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def empty_stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], sessionmaker[Session]]]:
    """A maker of empty stores, one per generated example (hypothesis runs many per test)."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        folder = tmp_path_factory.mktemp("queue-stories")

        def copy() -> sessionmaker[Session]:
            path = folder / f"{uuid.uuid4().hex}.db"
            shutil.copyfile(template, path)
            return make_session_factory(make_engine(f"sqlite:///{path}"))

        yield copy
        return
    engine = make_engine(request.getfixturevalue("postgres_template_url"))
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)

    def truncated() -> sessionmaker[Session]:
        with engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        return make_session_factory(engine)

    yield truncated
    engine.dispose()


def walk_queue(
    session: Session, now: Any, grace: int, stream: str, bucket: str | None
) -> list[int]:
    """Every item the queue lists for a stream (and bucket), following its cursors to the end,
    with pages and walks small enough that every continuation path is taken."""
    listed: list[int] = []
    cursor: str | None = None
    for _ in range(200):
        found = queue_page(
            session,
            now=now,
            grace_seconds=grace,
            stream=stream,
            bucket=bucket,
            cursor=cursor,
            limit=2,
            scan_cap=3,
        )
        listed += [item.item_id for item in found.items]
        cursor = found.next_cursor
        if cursor is None:
            return listed
    raise AssertionError("the queue's cursors never reached the end")


@settings(
    max_examples=15,
    database=None,  # nothing written into the checkout; failures print their example
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(story=stories(), later=stories())
def test_the_queue_counts_and_lists_exactly_the_reports_exceptions(
    empty_stores: Callable[[], sessionmaker[Session]], story: Story, later: Story
) -> None:
    """Whatever the store holds (matched, waiting, late, set aside by a pass, arrived since the
    last pass, refused, in flight), the console's queue agrees with the report, item by item."""
    factory = empty_stores()
    store = Store(factory)
    build_story(store, story)
    if story.run_pass:
        policy = ReconcilePolicy(notification_grace_seconds=story.grace)
        run_pass(factory, policy, now=at(0), publish=False)
    build_story(store, later)  # items no pass has seen yet
    now = at(story.until_offset)
    with factory() as session:
        report = build_report(session, ReportWindow(until=now), grace_seconds=story.grace)
        assert len(report.open_items) < 100  # every open item listed, to compare one by one
        expected = {
            (stream, label): sorted(
                i.item_id
                for i in report.open_items
                if i.stream == stream
                and i.state == "exception"
                and first <= i.age_days
                and (last is None or i.age_days <= last)
            )
            for stream in STREAMS
            for label, first, last in AGE_BUCKETS
        }
        found = counts(session, now, story.grace)
        assert found.complete
        for label, _, _ in AGE_BUCKETS:
            in_report = {s: n for s, n in report.ageing.counts[label].items() if n}
            assert {s: n for s, n in found.by_bucket[label].items() if n} == in_report
        for stream in STREAMS:
            every = sorted(i for (s, _), ids in expected.items() if s == stream for i in ids)
            assert walk_queue(session, now, story.grace, stream, None) == every
            for label, _, _ in AGE_BUCKETS:
                listed = walk_queue(session, now, story.grace, stream, label)
                assert listed == expected[(stream, label)]
        capped = counts(session, now, story.grace, cap=1)
        for stream in STREAMS:
            total = sum(row[stream] for row in found.by_bucket.values())
            assert sum(row[stream] for row in capped.by_bucket.values()) <= min(total, 1)
        unmatched = {i.stream for i in report.open_items}
        assert capped.partial >= unmatched  # a stream with anything open hit a cap of one


def test_a_walk_that_stops_at_its_cap_goes_on_from_there(
    session_factory: sessionmaker[Session],
) -> None:
    """Old and new items alternate; asking for the old ones with a walk of two candidates per
    request meets pages with nothing to show, which must still lead on to the rest."""
    store = Store(session_factory)
    holding = store.holding()
    old = []
    for n in range(4):
        store.posting(holding, 200 + n, posted=at(-5 * 86_400 - n))
        old.append(store.posting(holding, 100 + n, posted=at(-40 * 86_400 - n)).id)
    # No pass has run: every posting is new to matching, and all are late.
    with session_factory() as session:
        listed: list[int] = []
        cursor: str | None = None
        pages = 0
        while True:
            found = queue_page(
                session,
                now=at(0),
                grace_seconds=60,
                stream="posting",
                bucket="over 30",
                cursor=cursor,
                limit=1,
                scan_cap=2,
            )
            pages += 1
            listed += [item.item_id for item in found.items]
            cursor = found.next_cursor
            if cursor is None:
                break
        assert sorted(listed) == sorted(old)
        assert found.counts.by_bucket["over 30"]["posting"] == 4
        assert found.counts.by_bucket["2-7"]["posting"] == 4
