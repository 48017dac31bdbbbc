"""The demo's four injected faults, made real for the browser: tests/integration/reconciliation/
fault_world.py's scenario, with two balance snapshots (so the holding page draws its chart), then
passes until the four alerts are open. `build_fault_store` returns with the workers and the
sandbox stopped, so the store holds still while the browser looks at it.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.store.models import Alert, Delivery, Transfer
from sandbox.server import SandboxServer
from tests.integration.reconciliation.fault_world import (
    FAULT_KINDS,
    POLICY,
    count,
    embedded_workers,
    inject_faults,
    past_the_deadlines,
    snapshot_balances,
    wait_for,
)
from tests.integration.workers.conftest import fast_sandbox_config
from tests.integration.workers.ledger_compare import ledger_heard

__all__ = ["FAULT_KINDS", "build_fault_store"]


def _open_kinds(sessions: sessionmaker[Session]) -> set[str]:
    with sessions() as s:
        return set(s.scalars(select(Alert.kind).where(Alert.state != "resolved")))


def _passed_and_alerted(sessions: sessionmaker[Session]) -> bool:
    """One pass past the graces and deadlines; whether the four faults' alerts are open."""
    run_pass(sessions, POLICY, publish=False, now=past_the_deadlines())
    return _open_kinds(sessions) >= FAULT_KINDS


def build_fault_store(base_env: dict[str, str], db_url: str) -> None:
    """Run the faulty scenario into the store at `db_url`, then passes until its alerts open."""
    with (
        SandboxServer(fast_sandbox_config()) as sandbox,
        embedded_workers(base_env, db_url, sandbox) as embedded,
    ):
        sessions = embedded.running.runtime.sessions
        with inject_faults(
            sandbox, sessions, before_transfers=lambda: snapshot_balances(sessions, 2)
        ) as world:
            wait_for(
                "the store to hear everything",
                lambda: (
                    count(sessions, Transfer, Transfer.status == "awaiting_finality") == 1
                    and count(sessions, Transfer, Transfer.status == "completed") == 1
                    and count(sessions, Delivery, Delivery.state == "quarantined") >= 1
                    and count(sessions, Delivery, Delivery.state == "pending") == 0
                    # Every posting read: the passes judge past the graces.
                    and ledger_heard(sessions, sandbox.state, world.holding_refs)
                ),
                seconds=60,
            )
            snapshot_balances(sessions, 4)  # a second balance per holding: a line to draw
            wait_for("the four faults' alerts", lambda: _passed_and_alerted(sessions), seconds=60)
