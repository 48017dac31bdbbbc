"""The scheduled ledger audit waits for holdings: started on an empty register, the processes
record no audit of nothing, and the first audit runs once discovery has stored holdings and
their first reads are done (not a day later, when the daily tick comes round again; not while
the pollers are still reading the same ledgers).
"""

from __future__ import annotations

import time

from sqlalchemy import select

from foundation import load_settings
from reconciliation.ledger_audit.summary import NEVER, last_audit_line
from reconciliation.store.models import AuditRun
from sandbox.server import SandboxServer
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.scenario import prepare
from tests.waiting import wait_until
from workers import start_embedded

#: Long enough that only a start-up tick and discovery can send the audit during the test.
DAILY = {"RECON_AUDIT_SECONDS": "86400", "RECON_DISCOVER_HOLDINGS_SECONDS": "3600"}


def test_the_first_audit_runs_once_holdings_are_discovered(
    worker_env: dict[str, str], sandbox: SandboxServer
) -> None:
    settings = load_settings({**worker_env, **DAILY})
    embedded = start_embedded(settings, lock_seconds=3)
    try:
        sessions = embedded.running.runtime.sessions
        # The start-up ticks (discovery and the audit) sent, and run on an empty register.
        scheduler = embedded.scheduler
        assert scheduler is not None
        wait_until(
            lambda: all(scheduler.ticks_sent(t) for t in ("discover_holdings", "audit_ledger")),
            what="the start-up ticks",
        )
        assert embedded.join_idle(30), "the start-up ticks never finished"
        with sessions() as s:
            assert list(s.scalars(select(AuditRun.holdings))) == []
            assert last_audit_line(s) == NEVER
        with inbox_receiver(sessions) as url:
            prepare(sandbox, url)  # three holdings at the provider
            from workers.actors import discover_holdings

            discover_holdings.send()
            deadline = time.monotonic() + 60
            while True:
                with sessions() as s:
                    runs = list(
                        s.execute(
                            select(AuditRun.holdings, AuditRun.status).where(
                                AuditRun.finished_at.is_not(None)
                            )
                        )
                    )
                    line = last_audit_line(s)
                if runs:
                    break
                assert time.monotonic() < deadline, "no audit ran after discovery"
                time.sleep(0.2)
    finally:
        embedded.stop()
    assert [tuple(r) for r in runs] == [(3, "clean")]
    assert line.startswith("last audit: clean, 3 holdings, ")
