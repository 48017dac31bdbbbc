"""Properties of the activity reader and poller, on generated providers, ledgers and crashes.

Each example is a provider (last-page cursor, page cap, what it does above the cap, whether it
serves oldest_first), a page size recon asks for, a few holdings whose ledgers grow over several
polls with many equal `postedAt` values, a page budget that cuts reads into messages, and per
poll perhaps one crash: the reader killed on its n-th request, or the store's n-th commit lost.
Whatever was drawn:

- a read that ends caught up has stored every posting its holding has (no next poll needed);
- after every poll, each posting of the ledger is stored exactly once and nothing else is.

A provider that serves only newest_first may order equal `postedAt` values any way it likes,
so there a new posting at the newest instant lands anywhere among its equals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from reconciliation.store.models import Holding
from sandbox.variants import PRESETS, ProviderVariant
from tests.integration.workers.inprocess_sandbox import (
    InProcessSandbox,
    StepClock,
    crash_on_commit,
    empty_store,
    inprocess_sandbox,
    read_until_caught_up,
    reader_settings,
)
from workers import Runtime, build_runtime, release_runtime
from workers.actors.holdings import discover

#: Offsets (ms after the newest posting) a new posting takes: mostly 0, so ties abound.
OFFSETS = st.sampled_from([0, 0, 0, 0, 1, 1, 7])


@dataclass(frozen=True)
class Crash:
    """One crash in a poll: `read` kills the n-th activity request, `write` the n-th commit."""

    kind: str
    nth: int


@dataclass(frozen=True)
class Scenario:
    variant: ProviderVariant
    page_size: int
    page_budget: int
    #: Per poll, per holding: the offsets of the postings that arrive before it.
    polls: list[list[list[int]]]
    crashes: list[Crash | None]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    variant = ProviderVariant(
        name="generated",
        last_page_cursor=draw(st.sampled_from(["last-entry", "null", "absent"])),
        page_cap=draw(st.integers(1, 40)),
        over_cap=draw(st.sampled_from(["reject", "clamp"])),
        sort_directions=draw(
            st.sampled_from([("newest_first", "oldest_first"), ("newest_first",)])
        ),
    )
    holdings = draw(st.integers(1, 2))
    count = draw(st.integers(1, 3))
    polls = [
        [draw(st.lists(OFFSETS, max_size=70 if poll == 0 else 25)) for _ in range(holdings)]
        for poll in range(count)
    ]
    crash = st.one_of(
        st.none(),
        st.builds(Crash, kind=st.sampled_from(["read", "write"]), nth=st.integers(1, 10)),
    )
    return Scenario(
        variant=variant,
        page_size=draw(st.integers(1, 50)),
        page_budget=draw(st.integers(1, 4)),
        polls=polls,
        crashes=[draw(crash) for _ in polls],
    )


@pytest.fixture
def sandbox() -> Iterator[InProcessSandbox]:
    with inprocess_sandbox(PRESETS["recon"]) as made:
        yield made


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scenario=scenarios())
def test_every_posting_is_stored_exactly_once_whatever_the_provider_and_crashes(
    base_env: dict[str, str], db_url: str, sandbox: InProcessSandbox, scenario: Scenario
) -> None:
    sandbox.reset(scenario.variant, seed=len(scenario.polls) * 31 + scenario.page_size)
    walk_only = "oldest_first" not in scenario.variant.sort_directions
    clock = StepClock()
    settings_ = reader_settings({**base_env, "DATABASE_URL": db_url}, scenario.page_size)
    rt = build_runtime(settings_, transport=sandbox.transport, clock=clock)
    try:
        empty_store(rt.engine)
        refs = [sandbox.new_holding() for _ in scenario.polls[0]]
        discover(rt)
        ids = _ids_by_ref(rt)
        for arrivals, crash in zip(scenario.polls, scenario.crashes, strict=True):
            for ref, offsets in zip(refs, arrivals, strict=True):
                sandbox.add_postings(ref, offsets, anywhere_in_ties=walk_only)
            if crash is not None and crash.kind == "read":
                sandbox.transport.kill_at = sandbox.transport.activity_requests + crash.nth
            nth_commit = crash.nth if crash is not None and crash.kind == "write" else 0
            with crash_on_commit(rt.engine, nth_commit):
                for ref in refs:
                    read_until_caught_up(rt, ids[ref], clock, page_budget=scenario.page_budget)
                    # Caught up means complete: nothing is left for the next poll.
                    sandbox.assert_stored(rt.sessions, [ref])
            sandbox.transport.kill_at = None
        assert sandbox.assert_stored(rt.sessions, refs) == sum(
            len(offsets) for arrivals in scenario.polls for offsets in arrivals
        )
    finally:
        release_runtime(rt)


def _ids_by_ref(rt: Runtime) -> dict[str, int]:
    with rt.sessions() as session:
        return {str(r): i for r, i in session.execute(select(Holding.holding_ref, Holding.id))}
