"""The activity reader under each provider variant, into SQLite and PostgreSQL.

The gateway spec leaves the last-page cursor, the page-size cap and the sort directions "not
shown"; each test plays one answer (sandbox/variants.py) and checks that every posting is
stored once, that a read that says it caught up really has, and what the reader learned.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select

from reconciliation.store.models import ActivityCursor, Holding
from sandbox.variants import PRESETS, parse_variant
from tests.integration.workers.inprocess_sandbox import (
    InProcessSandbox,
    StepClock,
    inprocess_sandbox,
    read_until_caught_up,
    reader_settings,
)
from workers import Runtime, build_runtime, release_runtime
from workers.actors.activity import read_activity
from workers.actors.holdings import discover


@pytest.fixture
def sandbox() -> Iterator[InProcessSandbox]:
    with inprocess_sandbox(PRESETS["recon"]) as made:
        yield made


@pytest.fixture
def env(base_env: dict[str, str], db_url: str) -> dict[str, str]:
    return {**base_env, "DATABASE_URL": db_url}


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


def runtime(env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock, size: int) -> Runtime:
    return build_runtime(reader_settings(env, size), transport=sandbox.transport, clock=clock)


def holdings_by_ref(rt: Runtime) -> dict[str, int]:
    discover(rt)
    with rt.sessions() as session:
        return {str(r): i for r, i in session.execute(select(Holding.holding_ref, Holding.id))}


def cursor_row(rt: Runtime, holding_id: int) -> ActivityCursor:
    with rt.sessions() as session:
        row = session.get(ActivityCursor, holding_id)
        assert row is not None
        session.expunge(row)
        return row


@pytest.mark.parametrize(
    "spec",
    [
        "recon",
        "standard",
        "sparse",
        "recon,page_cap=7,over_cap=clamp",
        "standard,page_cap=7",
        "recon,page_cap=30",
        "sparse,last_page_cursor=last-entry",
    ],
)
def test_every_variant_catches_up_and_keeps_up(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock, spec: str
) -> None:
    variant = parse_variant(spec)
    sandbox.reset(variant, seed=len(spec))
    walk_only = "oldest_first" not in variant.sort_directions
    sizes = [0, 1, 7, 49, 50, 51, 137]
    refs = [sandbox.new_holding() for _ in sizes]
    for ref, size in zip(refs, sizes, strict=True):
        sandbox.add_postings(
            ref, [sandbox.rng.choice((0, 0, 0, 1)) for _ in range(size)], anywhere_in_ties=walk_only
        )
    rt = runtime(env, sandbox, clock, 50)
    try:
        ids = holdings_by_ref(rt)
        for ref in refs:
            read_until_caught_up(rt, ids[ref], clock)
            # A read that says it caught up has everything: no waiting for the next poll.
            sandbox.assert_stored(rt.sessions, [ref])
        # New postings at the newest instant (ties) and after it, then one poll each.
        for ref in refs:
            sandbox.add_postings(ref, [0, 0, 1, 0], anywhere_in_ties=walk_only)
        before = sandbox.transport.activity_requests
        for ref in refs:
            assert read_activity(rt, ids[ref]).caught_up
        assert sandbox.transport.activity_requests - before <= 2 * len(refs)
        assert sandbox.assert_stored(rt.sessions, refs) == sum(sizes) + 4 * len(refs)
    finally:
        release_runtime(rt)


def test_one_probe_finds_a_refused_direction_for_every_holding(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock
) -> None:
    sandbox.reset(PRESETS["standard"])
    refs = [sandbox.new_holding() for _ in range(4)]
    for ref in refs:
        sandbox.add_postings(ref, [0] * 30, anywhere_in_ties=True)
    rt = runtime(env, sandbox, clock, 20)
    try:
        ids = holdings_by_ref(rt)
        for ref in refs:
            read_until_caught_up(rt, ids[ref], clock)
        assert sandbox.transport.directions["oldest_first"] == 1
        assert sandbox.transport.answers[400] == 1
        first = cursor_row(rt, ids[refs[0]])
        assert first.oldest_first is False
        # Each holding walked to its end and keeps the walk's top as its high-water.
        for ref in refs:
            row = cursor_row(rt, ids[ref])
            assert row.after_posted_at is None and row.high_water_posted_at is not None
        sandbox.assert_stored(rt.sessions, refs)
    finally:
        release_runtime(rt)


def test_a_refused_page_size_is_asked_once_and_remembered(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock
) -> None:
    sandbox.reset(parse_variant("recon,page_cap=30,over_cap=reject"))
    refs = [sandbox.new_holding() for _ in range(3)]
    for ref in refs:
        sandbox.add_postings(ref, [1] * 70, anywhere_in_ties=False)
    rt = runtime(env, sandbox, clock, 100)
    try:
        ids = holdings_by_ref(rt)
        for ref in refs:
            read_until_caught_up(rt, ids[ref], clock)
        # 100 refused oldest-first and newest-first alike (so the size, not the direction),
        # then 30, 30, 10 per holding (10 < 30 served before: the end), all oldest-first.
        assert sandbox.transport.answers[400] == 2
        assert sandbox.transport.activity_requests == 2 + 3 * 3
        assert sandbox.transport.directions["newest_first"] == 1
        assert cursor_row(rt, ids[refs[0]]).page_size == 30
        sandbox.assert_stored(rt.sessions, refs)
    finally:
        release_runtime(rt)


def test_a_silent_cap_is_told_from_the_end_within_the_same_read(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock
) -> None:
    sandbox.reset(parse_variant("recon,page_cap=7,over_cap=clamp"))
    sizes = {"a": 20, "b": 14, "c": 3}
    refs = {name: sandbox.new_holding() for name in sizes}
    for name, ref in refs.items():
        sandbox.add_postings(ref, [0] * sizes[name], anywhere_in_ties=False)
    rt = runtime(env, sandbox, clock, 50)
    try:
        ids = holdings_by_ref(rt)
        requests = {}
        for name in ("a", "b", "c"):
            before = sandbox.transport.activity_requests
            messages, _ = read_until_caught_up(rt, ids[refs[name]], clock)
            assert messages == 1
            requests[name] = sandbox.transport.activity_requests - before
            sandbox.assert_stored(rt.sessions, [refs[name]])
        # a: 7 (nothing learned: read on), 7 (as large as any: read on), 6 (the end).
        # b: 7, 7, then an empty page. c: 3 is smaller than the 7 served before: the end.
        assert requests == {"a": 3, "b": 3, "c": 1}
        assert cursor_row(rt, ids[refs["a"]]).largest_page == 7
    finally:
        release_runtime(rt)


@pytest.mark.parametrize("style", ["null", "absent", "last-entry"])
def test_the_last_entry_is_the_position_when_the_gateway_gives_none(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock, style: str
) -> None:
    sandbox.reset(parse_variant(f"recon,last_page_cursor={style}"))
    ref = sandbox.new_holding()
    sandbox.add_postings(ref, [0, 1] * 6, anywhere_in_ties=False)
    rt = runtime(env, sandbox, clock, 5)
    try:
        holding = holdings_by_ref(rt)[ref]
        read_until_caught_up(rt, holding, clock)
        row = cursor_row(rt, holding)
        last = sandbox.state.postings(ref)[-1]
        assert (row.after_posted_at, row.after_receipt_ref, row.after_line_ref) == (
            last["postedAt"],
            last["receiptRef"],
            last["lineRef"],
        )
        assert row.sort_direction == "oldest_first"
        assert row.cursor_source == ("gateway" if style == "last-entry" else "entry")
        sandbox.add_postings(ref, [0, 0, 3], anywhere_in_ties=False)
        before = sandbox.transport.activity_requests
        assert read_activity(rt, holding).caught_up
        assert sandbox.transport.activity_requests - before == 1
        assert sandbox.assert_stored(rt.sessions, [ref]) == 15
    finally:
        release_runtime(rt)


def test_a_holding_read_oldest_first_walks_once_the_provider_refuses_it(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock
) -> None:
    sandbox.reset(PRESETS["recon"])
    ref = sandbox.new_holding()
    sandbox.add_postings(ref, [0, 0, 1] * 10, anywhere_in_ties=False)
    rt = runtime(env, sandbox, clock, 8)
    try:
        holding = holdings_by_ref(rt)[ref]
        read_until_caught_up(rt, holding, clock)
        stored_cursor = cursor_row(rt, holding).after_posted_at
        # The provider stops serving oldest_first; postings keep arriving, ties included.
        sandbox.state.config.variant = PRESETS["standard"]
        sandbox.add_postings(ref, [0, 0, 0, 2, 0], anywhere_in_ties=True)
        read_until_caught_up(rt, holding, clock)
        row = cursor_row(rt, holding)
        assert row.after_posted_at is None and row.sort_direction is None
        assert row.high_water_posted_at is not None
        assert row.high_water_posted_at > (stored_cursor or "")
        assert sandbox.assert_stored(rt.sessions, [ref]) == 35
    finally:
        release_runtime(rt)


def test_a_walk_cut_by_its_budget_resumes_where_it_stopped(
    env: dict[str, str], sandbox: InProcessSandbox, clock: StepClock
) -> None:
    sandbox.reset(PRESETS["standard"])
    ref = sandbox.new_holding()
    sandbox.add_postings(
        ref, [sandbox.rng.choice((0, 0, 1)) for _ in range(300)], anywhere_in_ties=True
    )
    rt = runtime(env, sandbox, clock, 50)
    try:
        holding = holdings_by_ref(rt)[ref]
        first = read_activity(rt, holding, page_budget=2)
        assert not first.caught_up
        mid = cursor_row(rt, holding)
        assert mid.sort_direction == "newest_first" and mid.walk_top_posted_at is not None
        assert mid.high_water_posted_at is None  # the first walk has nothing below it
        messages, _ = read_until_caught_up(rt, holding, clock, page_budget=2)
        assert messages == 2
        # The probe, then six full pages; the sixth has no cursor: the end.
        assert sandbox.transport.activity_requests == 1 + 6
        assert sandbox.assert_stored(rt.sessions, [ref]) == 300
    finally:
        release_runtime(rt)
