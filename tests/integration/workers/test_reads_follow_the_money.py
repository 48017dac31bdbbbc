"""Reads follow the money, end to end: real workers, the sandbox over HTTP, both stores.

Invariant 12: reads follow the money; no signal is ever dropped, only coalesced or deferred. A
notification naming a holding has its posting stored without waiting for any round (here
the silent reads are an hour apart and no scheduler runs); a posting whose webhook was
dropped is still found within the staleness ceiling, however long the holding was quiet.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from reconciliation.store.models import ActivityCursor, BalanceSnapshot, Holding
from sandbox.server import SandboxServer
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.ledger_compare import sandbox_ledger, stored_ledger
from tests.integration.workers.scenario import Scenario, address, prepare
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import ValueUnit
from workers import start_embedded
from workers.actors import discover_holdings

#: Where the dropped-webhook test registers its webhook: nothing listens, every delivery fails.
NOBODY = "http://127.0.0.1:9/webhooks"


def _wait(what: str, done: Callable[[], bool], seconds: float) -> float:
    """Seconds until `done()`; fails after `seconds`."""
    started = time.monotonic()
    while not done():
        assert time.monotonic() - started < seconds, f"not within {seconds:g}s: {what}"
        time.sleep(0.1)
    return time.monotonic() - started


def _ledger_agrees(sandbox: SandboxServer, sessions: sessionmaker[Session], s: Scenario) -> bool:
    refs = [h["holdingRef"] for h in s.holdings]
    return stored_ledger(sessions) == sandbox_ledger(sandbox.state, refs)


def _credit(sandbox: SandboxServer, scenario: Scenario) -> None:
    """An inbound credit to the third holding; returns once the sandbox has posted it."""
    ref = scenario.holdings[2]["holdingRef"]

    def posted() -> int:
        return len(sandbox_ledger(sandbox.state, [ref])[ref])

    before = posted()
    with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
        gateway.simulate_inbound_credit(
            CreditRequest(
                target=address(scenario.holdings[2]),
                value_unit=ValueUnit.fiat("NGN"),
                amount_minor_units=777,
            )
        )
    _wait("the credit posted", lambda: posted() > before, 10)


def _latest_balance(sessions: sessionmaker[Session], holding_ref: str) -> int | None:
    with sessions() as s:
        row = s.execute(
            select(BalanceSnapshot.settled_minor)
            .join(Holding, Holding.id == BalanceSnapshot.holding_id)
            .where(Holding.holding_ref == uuid.UUID(holding_ref))
            .order_by(BalanceSnapshot.observed_at.desc(), BalanceSnapshot.id.desc())
            .limit(1)
        ).first()
    return None if row is None else int(row[0])


def _least_quiet(sessions: sessionmaker[Session]) -> int:
    with sessions() as s:
        return int(s.scalar(select(func.min(ActivityCursor.quiet_reads))) or 0)


def test_a_notification_has_its_posting_stored_without_waiting_for_a_round(
    worker_env: dict[str, str], sandbox: SandboxServer
) -> None:
    """Invariant 12: the credit's webhook names the holding, whose read and balance follow at
    once; no round would read it (silent reads an hour apart, no scheduler)."""
    settings = load_settings(worker_env)
    embedded = start_embedded(settings, with_scheduler=False)
    try:
        sessions = embedded.running.runtime.sessions
        with inbox_receiver(sessions) as url:
            scenario = prepare(sandbox, url)
            discover_holdings.send()
            _wait("the first reads", lambda: _ledger_agrees(sandbox, sessions, scenario), 60)
            _credit(sandbox, scenario)  # its PAYMENT_RECEIVED names the holding
            _wait("the notified posting", lambda: _ledger_agrees(sandbox, sessions, scenario), 30)
            # The balance follows the read (the snapshot tick is an hour away, and not running).
            ref = scenario.holdings[2]["holdingRef"]
            _wait(
                "its balance",
                lambda: _latest_balance(sessions, ref) == sandbox.state.posted_sum(ref),
                30,
            )
    finally:
        embedded.stop()


def test_a_dropped_webhooks_posting_is_found_within_the_ceiling(
    worker_env: dict[str, str], sandbox: SandboxServer
) -> None:
    """Invariant 12: nothing signals the credit (its webhook goes nowhere), and the holding
    has backed off far past the ceiling's worth, yet it is read within the ceiling."""
    ceiling = 2.0
    env = {
        **worker_env,
        "RECON_POLL_ACTIVITY_SECONDS": "0.5",
        "RECON_MAX_STALENESS_SECONDS": str(ceiling),
        "RECON_DISCOVER_HOLDINGS_SECONDS": "3600",
    }
    scenario = prepare(sandbox, NOBODY)  # before the workers start, so discovery finds it
    embedded = start_embedded(load_settings(env))
    try:
        sessions = embedded.running.runtime.sessions
        _wait("the first reads", lambda: _ledger_agrees(sandbox, sessions, scenario), 60)
        # Quiet long enough that, without a ceiling, the next read would be 0.5 * 2**6 = 32 s
        # away.
        _wait("six quiet reads", lambda: _least_quiet(sessions) >= 6, 60)
        _credit(sandbox, scenario)
        took = _wait(
            "the unnotified posting", lambda: _ledger_agrees(sandbox, sessions, scenario), 30
        )
        assert took < ceiling + 8, f"found after {took:.1f}s, ceiling {ceiling:g}s"
    finally:
        embedded.stop()
