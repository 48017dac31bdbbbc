"""A rebuild after the demo-like fault scenario reproduces the live state exactly.

The world of tests/integration/reconciliation/fault_world.py (the sandbox over HTTP with its
fault injection, recon's embedded workers): an altered credit, a dropped credit, a second body
under one delivery id, a transfer the rail holds, and healthy traffic beside them. After the live pass, the state rebuilt from the facts equals the live one,
table by table; after the held transfer settles and another pass resolves its alert, again.
"""

from __future__ import annotations

from sqlalchemy import select

from reconciliation import run_pass
from reconciliation.rebuild.run import Mode, rebuild
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, Delivery, Notification, Transfer
from sandbox.server import SandboxServer
from tests.integration.reconciliation.fault_world import (
    POLICY,
    count,
    inject_faults,
    past_the_deadlines,
    sandbox,
    wait_for,
    workers,
)
from tests.integration.workers.ledger_compare import ledger_heard
from upstream.gateway import GatewayClient
from upstream.webhooks.payloads import configured_reader
from workers import EmbeddedWorkers

__all__ = ["sandbox", "workers"]  # the fault world's fixtures, used by name below


def test_rebuild_reproduces_the_state_the_fault_scenario_left(
    sandbox: SandboxServer, workers: EmbeddedWorkers
) -> None:
    """Invariant 10: the rebuild judges exactly what the live pass judged and finds no difference."""
    sessions = workers.running.runtime.sessions
    engine = workers.running.runtime.engine
    state = sandbox.state
    with inject_faults(sandbox, sessions) as world:
        refs, held = [world.settled, world.held], world.held

        def heard_everything() -> bool:
            with sessions() as s:
                statuses = {t.transfer_ref: t.status for t in s.scalars(select(Transfer))}
            return (
                (statuses.get(refs[0]), statuses.get(held)) == ("completed", "awaiting_finality")
                and count(sessions, Notification, Notification.event_type == "PAYMENT_RECEIVED")
                == 2
                and count(
                    sessions, Notification, Notification.event_type == "TRANSACTION_COMPLETED"
                )
                == 1
                and count(sessions, Delivery) >= 5
                and count(sessions, Delivery, Delivery.state == "pending") == 0
                # Every posting read: the pass judges past the graces, so nothing may be unread.
                and ledger_heard(sessions, state, world.holding_refs)
            )

        wait_for("the store to hear everything", heard_everything)
        # The scheduler's own pass at start-up may still hold the lease: wait for ours to run.
        wait_for(
            "a pass of our own",
            lambda: not run_pass(sessions, POLICY, publish=False, now=past_the_deadlines()).skipped,
        )
        with sessions() as s:
            kinds = sorted(s.scalars(select(Alert.kind).where(Alert.state != "resolved")))
        assert kinds == [
            "amount_mismatch",
            "delivery_body_conflict",
            "finality_overdue",
            "posting_without_notification",
        ]
        workers.stop()  # a quiet store: nothing moves between the pass and the rebuild

        first = rebuild(engine, POLICY, configured_reader(), mode=Mode.DRY_RUN)
        assert first.comparison is not None
        assert [d.as_dict() for d in first.comparison.differences] == []

        state.finalize(str(held), "settle")
        with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
            status = gateway.transfer_status(held).value
        with transaction(sessions) as session:
            row = session.scalars(select(Transfer).where(Transfer.transfer_ref == held)).one()
            row.status, row.is_terminal, row.is_successful = status.status, True, True
        assert not run_pass(sessions, POLICY, publish=False, now=past_the_deadlines()).skipped
        second = rebuild(engine, POLICY, configured_reader(), mode=Mode.DRY_RUN)
        assert second.comparison is not None
        assert [d.as_dict() for d in second.comparison.differences] == []
        assert second.comparison.live.overall != first.comparison.live.overall
