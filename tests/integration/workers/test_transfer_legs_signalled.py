"""A transfer recon created reaching a terminal stage makes both legs' reads due at once.

Invariant 12: reads follow the money. The legs' postings are made when the transfer settles
(or undone when it fails); neither holding is notified of recon's own transfer by a webhook
it could wait for, and both were quiet, read again only an hour from now.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from reconciliation.postings import PRIORITY_SIGNALLED
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Holding
from reconciliation.transfers.polling import record_created_transfer
from sandbox.bulk import build_bulk
from sandbox.server import SandboxServer
from tests.integration.workers.test_transfer_polling import QUICK, address, all_terminal
from upstream.gateway import GatewayClient
from upstream.wire.common import Destination, ValueUnit
from upstream.wire.transfers import TransferRequest
from workers import Runtime
from workers.actors.holdings import discover
from workers.actors.transfers import poll_due_transfers


def test_a_terminal_transfer_makes_both_legs_due_at_once(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    """Invariant 12: both legs of recon's own transfer are read as soon as it is terminal."""
    source, target, bystander = build_bulk(sandbox.state, holdings=3, postings=9, seed=11)
    discover(runtime)
    later = runtime.clock() + timedelta(hours=1)
    with transaction(runtime.sessions) as session:
        session.execute(update(ActivityCursor).values(next_poll_at=later, due_priority=2))
    with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
        created = gateway.create_transfer(
            TransferRequest(
                source=address(source),
                destination=Destination.internal(address(target)),
                value_unit=ValueUnit.fiat("NGN"),
                amount_minor_units=500,
            )
        )
    with transaction(runtime.sessions) as session:
        record_created_transfer(session, created.transfer, runtime.clock())
    deadline = runtime.clock() + timedelta(seconds=20)
    while not all_terminal(runtime.sessions):
        assert runtime.clock() < deadline, "the transfer did not reach a terminal status"
        poll_due_transfers(runtime, backoff=QUICK)
    with runtime.sessions() as session:
        rows = {
            str(ref): (signalled, priority, due)
            for ref, signalled, priority, due in session.execute(
                select(
                    Holding.holding_ref,
                    ActivityCursor.signalled_at,
                    ActivityCursor.due_priority,
                    ActivityCursor.next_poll_at,
                ).join(ActivityCursor, ActivityCursor.holding_id == Holding.id)
            )
        }
    for leg in (source, target):
        signalled, priority, due = rows[leg["holdingRef"]]
        assert signalled is not None and priority == PRIORITY_SIGNALLED
        # Its read was sent at once: the due time is now the lost-message redo of a read in
        # flight, no longer the quiet schedule's hour.
        assert due is not None and due != later
    assert rows[bystander["holdingRef"]] == (None, 2, later)  # no money moved there
