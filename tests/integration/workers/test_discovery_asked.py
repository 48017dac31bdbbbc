"""A notification naming a holding recon has not discovered asks for discovery at once.

Without it a new account's first credit waited for the discovery tick (five minutes by
default) before recon read a posting for it. The end-to-end case runs the workers with no
scheduler at all, so only the inbox can have asked.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from reconciliation.postings import ask_for_discovery
from reconciliation.postings.discovery_asks import ASK_INTERVAL_SECONDS, ASKED_AT
from reconciliation.store import transaction, watermarks
from reconciliation.store.models import Holding
from sandbox.server import SandboxServer
from tests.integration.reconciliation.builders import Store
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.scenario import move_money, prepare
from workers import start_embedded

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def test_an_unknown_holding_asks_once_per_interval_and_a_known_one_never(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 12: no signal is dropped, only coalesced or deferred: an ask inside the interval is sent at
    the interval's end, and an ask while that one is pending is coalesced into it."""
    known = Store(session_factory).holding(locator=False)
    stranger = uuid.uuid4()

    def ask(holdings: set[uuid.UUID], endpoints: set[uuid.UUID], at: datetime) -> float | None:
        return ask_for_discovery(session_factory, holdings, endpoints, at)

    assert ask({known.holding_ref}, {known.endpoint_ref}, NOW) is None
    assert ask(set(), set(), NOW) is None
    assert ask({known.holding_ref}, {stranger}, NOW) == 0  # an endpoint nobody has
    assert ask({stranger}, set(), NOW + timedelta(seconds=10)) == 20  # deferred, not dropped
    assert ask({stranger}, set(), NOW + timedelta(seconds=15)) is None  # the deferred one covers it
    assert ask({stranger}, set(), NOW + timedelta(seconds=31)) == 29  # after the deferred one
    assert ask({stranger}, set(), NOW + timedelta(seconds=95)) == 0  # the interval is over
    assert ask({known.holding_ref}, set(), NOW + timedelta(minutes=5)) is None


def test_an_ask_inside_the_interval_is_deferred_then_served(
    worker_env: dict[str, str], sandbox: SandboxServer
) -> None:
    """Invariant 12: an ask made right after another is not thrown away: discovery comes at the interval's
    end (here a few seconds away, as if another account had been asked about just before),
    not at the discovery tick an hour later."""
    settings = load_settings({**worker_env, "RECON_DISCOVER_HOLDINGS_SECONDS": "3600"})
    embedded = start_embedded(settings, with_scheduler=False)
    try:
        sessions = embedded.running.runtime.sessions
        asked = datetime.now(UTC) - timedelta(seconds=ASK_INTERVAL_SECONDS - 4)
        with transaction(sessions) as s:
            watermarks.write(s, ASKED_AT, watermarks.to_millis(asked), asked)
        window_end = asked + timedelta(seconds=ASK_INTERVAL_SECONDS)
        with inbox_receiver(sessions) as url:
            scenario = prepare(sandbox, url)
            move_money(sandbox, scenario, sessions)
            found = _wait_for_holdings(sessions, len(scenario.holdings))
        assert min(found) >= window_end - timedelta(seconds=0.5), "discovery was not deferred"
    finally:
        embedded.stop()


def _wait_for_holdings(sessions: sessionmaker[Session], wanted: int) -> list[datetime]:
    """When each holding was discovered, once `wanted` are (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        with sessions() as s:
            found = list(s.scalars(select(Holding.discovered_at)))
        if len(found) == wanted:
            return [f if f.tzinfo else f.replace(tzinfo=UTC) for f in found]
        assert time.monotonic() < deadline, f"{len(found)} holdings discovered, not {wanted}"
        time.sleep(0.2)


def test_a_credit_to_an_undiscovered_holding_has_it_discovered_without_the_tick(
    worker_env: dict[str, str], sandbox: SandboxServer
) -> None:
    """Invariant 12: a notification naming an unknown holding has it discovered and read at once,
    not at the next round."""
    settings = load_settings({**worker_env, "RECON_DISCOVER_HOLDINGS_SECONDS": "3600"})
    embedded = start_embedded(settings, with_scheduler=False)
    try:
        sessions = embedded.running.runtime.sessions
        with inbox_receiver(sessions) as url:
            scenario = prepare(sandbox, url)
            with sessions() as s:
                assert s.scalar(select(func.count()).select_from(Holding)) == 0
            move_money(sandbox, scenario, sessions)  # its notifications name the holdings
            deadline = time.monotonic() + 60
            while True:
                with sessions() as s:
                    found = s.scalar(select(func.count()).select_from(Holding))
                if found == len(scenario.holdings):
                    break
                assert time.monotonic() < deadline, f"{found} holdings discovered, not 3"
                time.sleep(0.2)
    finally:
        embedded.stop()
