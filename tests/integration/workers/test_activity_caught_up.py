"""When a read of a holding's activity says it caught up, it says up to when.

`last_polled_at` is what the balance check trusts: a snapshot observed at or before it is
compared with the stored postings. So it must be a moment every posting made before it is
stored, which is when the read began asking for its pages, not when it ended: a newest-first
walk lists only what was there when its first page was served, and a balance observed while
its pages were being read may hold a posting that only the next walk stores.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import select

from reconciliation.store.models import ActivityCursor, Holding
from sandbox.variants import PRESETS
from tests.integration.workers.inprocess_sandbox import (
    ACTIVITY_PATH,
    InProcessSandbox,
    StepClock,
    inprocess_sandbox,
    reader_settings,
)
from workers import Runtime, build_runtime, release_runtime
from workers.actors.activity import read_activity
from workers.actors.holdings import discover

#: How long one activity page takes to come back, on the reader's clock.
PAGE_SECONDS = 2.0


class SlowPages(httpx.BaseTransport):
    """The sandbox, with each activity page taking `PAGE_SECONDS` of the reader's clock."""

    def __init__(self, inner: httpx.BaseTransport, clock: StepClock) -> None:
        self.inner, self.clock = inner, clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == ACTIVITY_PATH:
            self.clock.advance(PAGE_SECONDS)
        return self.inner.handle_request(request)


@pytest.fixture
def sandbox() -> Iterator[InProcessSandbox]:
    with inprocess_sandbox(PRESETS["sparse"]) as made:  # newest-first walks only
        yield made


def polled_at(rt: Runtime, holding_id: int) -> object:
    with rt.sessions() as session:
        row = session.get(ActivityCursor, holding_id)
        assert row is not None
        return row.last_polled_at


def test_a_read_caught_up_to_when_it_began_listing_not_when_it_ended(
    base_env: dict[str, str], db_url: str, sandbox: InProcessSandbox
) -> None:
    clock = StepClock()
    ref = sandbox.new_holding()
    sandbox.add_postings(ref, [1] * 12, anywhere_in_ties=False)
    settings = reader_settings({**base_env, "DATABASE_URL": db_url}, 5)
    rt = build_runtime(settings, transport=SlowPages(sandbox.transport, clock), clock=clock)
    try:
        discover(rt)
        with rt.sessions() as session:
            [holding_id] = session.scalars(select(Holding.id)).all()

        began = clock()
        first = read_activity(rt, holding_id)  # a walk of three pages, six seconds
        assert first.caught_up and first.pages == 3
        assert clock() > began
        assert polled_at(rt, holding_id) == began

        # A walk cut short by the page budget and finished by a later message began listing
        # in the first: the second cannot say when, so the holding's moment stays put.
        sandbox.add_postings(ref, [1] * 12, anywhere_in_ties=False)
        cut = read_activity(rt, holding_id, page_budget=1)
        assert not cut.caught_up
        rest = read_activity(rt, holding_id)
        assert rest.caught_up
        assert polled_at(rt, holding_id) == began
        again = clock()
        assert read_activity(rt, holding_id).caught_up  # a walk of its own: its moment
        assert polled_at(rt, holding_id) == again
        sandbox.assert_stored(rt.sessions, [ref])
    finally:
        release_runtime(rt)
