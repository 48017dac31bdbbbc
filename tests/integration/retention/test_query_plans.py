"""Every periodic query reads what is new or due, never a table that grows with history.

A store with four months of reconciled history (tens of thousands of transfers, their legs,
webhooks, matches, status changes, hourly balance snapshots) and a few minutes of new traffic
is analysed (fresh statistics), then each periodic job of the worker runs once against it: the
reconciliation pass (matching, drift rules, alerts), the transfer claim, the activity claim and
lease, the sweep's queries, the balance job's read, and the retention run. Every statement they
send is explained as it goes out (plan_capture.py); a sequential scan of a table that grows
with history fails the test, naming the job and the statement.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from foundation import RetentionSettings
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.ledger_audit.ledger import stored_lines
from reconciliation.matching.candidates import explain
from reconciliation.notifications.processing import pending_deliveries
from reconciliation.operator.exception_queue import queue_page
from reconciliation.postings.activity import (
    acquire_lease,
    release_lease,
    watched_without_cursor,
)
from reconciliation.postings.balances import endpoints_to_read
from reconciliation.postings.due_reads import claim_due_holdings
from reconciliation.postings.holding_history import holding_view
from reconciliation.retention.runner import run_retention
from reconciliation.store.db import make_engine, make_session_factory, transaction
from reconciliation.transfers.polling import claim_due_transfers
from tests.integration.retention.history_data import add_recent, fill_history
from tests.integration.retention.plan_capture import PlanLog, explain_everything

pytestmark = pytest.mark.postgres

#: Tables whose size follows the history: none of them may be read whole by a periodic job.
GROWING: Final = frozenset(
    {
        "postings",
        "notifications",
        "deliveries",
        "transfers",
        "transfer_changes",
        "transfer_intents",
        "matches",
        "balance_snapshots",
        "balance_checks",
        "outbound_requests",
        "alerts",
        "audit_events",
    }
)

#: The table whose indexes migration 0009 thinned.
POSTINGS: Final = frozenset({"postings"})

NOW: Final = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RETENTION: Final = RetentionSettings(
    delivery_days=90,
    outbound_request_days=7,
    snapshot_thin_days=2,
    transfer_history_days=7,
    resolved_alert_days=30,
    run_seconds=3600.0,
    archive_dir=None,
    # The reconciled facts' limits too: their reads (match groups, members, the drift basis,
    # what no match row names) must stay index ranges over a history of this size. The last
    # ten of the 120 days go: enough batches to show every statement, few enough to be quick.
    posting_days=110,
    transfer_days=110,
    notification_days=110,
    match_days=110,
)


#: Every transfer was asked for through an intent (history_data writes none): retention
#: reads a pruned transfer's intents by transfer_ref, which must be an index range too.
INTENTS: Final = """
INSERT INTO transfer_intents (idempotency_key, requested_via, source_account_ref,
    source_endpoint_ref, source_holding_ref, dest_account_ref, dest_endpoint_ref,
    dest_holding_ref, currency, amount_minor, material_fingerprint, outcome, transfer_ref,
    created_at, answered_at)
SELECT gen_random_uuid(), 'api', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
    gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'NGN', coalesce(amount_minor, 1),
    md5(id::text), 'reserved', transfer_ref, created_at, created_at
FROM transfers
"""


@dataclass(frozen=True, slots=True)
class History:
    engine: Engine
    factory: sessionmaker[Session]
    plans: PlanLog


@pytest.fixture(scope="module")
def history(fresh_postgres_url: str) -> Iterator[History]:
    engine = make_engine(fresh_postgres_url)
    fill_history(
        engine, transfers=100_000, now=NOW - timedelta(minutes=10), days=120, snapshot_minutes=180
    )
    add_recent(engine, transfers=300, now=NOW - timedelta(minutes=2))
    with engine.begin() as conn:
        conn.execute(text(INTENTS))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))
    plans = explain_everything(engine)
    yield History(engine, make_session_factory(engine), plans)
    engine.dispose()


def _run_every_periodic_job(h: History) -> None:
    policy = ReconcilePolicy()
    with h.plans.running("reconcile pass"):
        run_pass(h.factory, policy, now=NOW, publish=False)
    with h.plans.running("transfer claim"):
        claim_due_transfers(h.factory, "plan-test", NOW, limit=100)
    with h.plans.running("activity claim"), transaction(h.factory) as session:
        claim_due_holdings(session, NOW, timedelta(seconds=60))
    with h.plans.running("activity lease"):
        lease = acquire_lease(h.factory, 1, "plan-test", NOW)
        assert lease is not None
        release_lease(h.factory, lease, NOW + timedelta(seconds=15), caught_up_at=NOW)
    with h.plans.running("sweep"), transaction(h.factory) as session:
        watched_without_cursor(session)
        pending_deliveries(session, NOW - timedelta(seconds=60), 5_000)
    with h.plans.running("balance snapshots"), transaction(h.factory) as session:
        endpoints_to_read(session)
    with h.plans.running("retention"):
        run_retention(
            h.factory, RETENTION, match_window_seconds=3600, projection_grace_seconds=120, now=NOW
        )


def test_no_periodic_job_reads_a_growing_table_whole(history: History) -> None:
    _run_every_periodic_job(history)
    explained = history.plans.explained
    assert {e.label for e in explained} >= {
        "reconcile pass",
        "transfer claim",
        "activity claim",
        "sweep",
        "retention",
    }, "the jobs ran no statement the listener could explain: the test would prove nothing"
    offenders = sorted(
        {
            f"{e.label}: Seq Scan on {', '.join(e.seq_scans_of(GROWING))} in: {e.statement[:600]}"
            for e in explained
            if e.seq_scans_of(GROWING)
        }
    )
    assert not offenders, f"{len(offenders)} statements read a growing table whole:\n\n" + (
        "\n\n".join(offenders)
    )


def _index_names(node: dict[str, Any]) -> Iterator[str]:
    if "Index Name" in node:
        yield node["Index Name"]
    for key in ("Plans", "InitPlan", "SubPlan"):
        for child in node.get(key, ()):
            yield from _index_names(child)


def test_every_reader_of_a_postings_index_still_reads_through_one(history: History) -> None:
    """Migration 0009 left `postings` three secondary indexes: receipt_ref, (holding_id,
    posted_at) and the exceptions' ids (partial). Their readers outside the periodic jobs (the
    console's exception queue, a notification's and a transfer's candidates, a holding's page,
    the ledger audit's stored lines) still read postings through an index, and the queue's
    marked branch through the partial one."""
    with history.factory() as session:
        notification = session.scalar(
            text("SELECT id FROM notifications WHERE receipt_ref IS NOT NULL ORDER BY id LIMIT 1")
        )
        transfer = session.scalar(text("SELECT id FROM transfers ORDER BY id DESC LIMIT 1"))
        holding = session.scalar(text("SELECT min(id) FROM holdings"))
    assert notification is not None and transfer is not None and holding is not None
    labels = ("exception queue", "candidates", "holding page", "ledger audit")
    with history.plans.running(labels[0]), history.factory() as session:
        queue_page(session, now=NOW, grace_seconds=600, stream="posting")
    with history.plans.running(labels[1]), history.factory() as session:
        explain(session, "notification", int(notification), window_seconds=3600)
        explain(session, "transfer", int(transfer), window_seconds=3600)
    with history.plans.running(labels[2]), history.factory() as session:
        holding_view(session, int(holding))
    with history.plans.running(labels[3]), history.factory() as session:
        list(stored_lines(session, int(holding), NOW - timedelta(days=1)))
    ran = [e for e in history.plans.explained if e.label in labels]
    reading = [e for e in ran if any(rel == "postings" for _, rel in e.scans)]
    assert {e.label for e in reading} == set(labels), "a reader ran no statement on postings"
    whole = [f"{e.label}: {e.statement[:400]}" for e in reading if e.seq_scans_of(POSTINGS)]
    assert not whole, "postings read whole:\n\n" + "\n\n".join(whole)
    marked = [
        e for e in reading if e.label == labels[0] and "postings.match_status = " in e.statement
    ]
    assert marked, "the exception queue asked for no marked postings"
    assert any("ix_postings_exception_id" in _index_names(e.plan) for e in marked), (
        "the exception queue's marked branch does not read the exceptions' index:\n"
        + "\n\n".join(e.statement[:400] for e in marked)
    )
