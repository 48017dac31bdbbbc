"""Where a pass stops reading (PostgreSQL): rows numbered before commit are never skipped, and
work in other databases of the same server never holds a pass up."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import structlog.testing
from sqlalchemy import Engine, insert, select, text
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.matching.frontier import WRITER_WAIT_SECONDS
from reconciliation.store.db import make_engine
from reconciliation.store.models import MatchBacklog, Posting
from tests.conftest import postgres_admin_url, postgres_only
from tests.integration.reconciliation.builders import T0, Store, at
from tests.waiting import another_session, wait_until

#: SQLite has one writer at a time and numbers rows max + 1: nothing is ever behind the tops.
pytestmark = postgres_only

POLICY = ReconcilePolicy(match_window_seconds=600, notification_grace_seconds=300)


@pytest.fixture
def store(session_factory: sessionmaker[Session]) -> Store:
    return Store(session_factory)


def _posting_row(holding_id: int) -> dict[str, Any]:
    return {
        "journal_ref": uuid.uuid4(),
        "line_ref": uuid.uuid4(),
        "receipt_ref": uuid.uuid4(),
        "holding_id": holding_id,
        "posted_at": T0,
        "side": "credit",
        "effect": "increase",
        "kind": "transfer_settlement",
        "amount_minor": 500,
        "currency": "NGN",
        "partition": "customer_liability",
        "normal_side": "credit_normal",
        "ingested_at": T0,
        "match_status": "unmatched",
    }


def _pass_in_thread(store: Store) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        out["result"] = run_pass(store.factory, POLICY, now=at(60), publish=False)
        out["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_a_posting_numbered_before_a_newer_one_but_committed_after_the_pass_began_is_not_lost(
    store: Store, engine: Engine
) -> None:
    holding = store.holding()
    with engine.connect() as writer:
        writer.begin()
        # Takes its id now, commits only once the pass is under way.
        early_id = writer.execute(
            insert(Posting).returning(Posting.id), _posting_row(holding.id)
        ).scalar_one()
        later = store.posting(holding, 900)
        assert later.id > early_id
        thread, out = _pass_in_thread(store)
        # The pass sees the writer and waits for it: its session asks, again and again, whether
        # the writer's transaction is still running. Only then does the writer commit.
        wait_until(
            lambda: another_session(engine, "query LIKE '%virtualxid = ANY%'"),
            seconds=30,
            what="the pass to wait for the writer",
        )
        assert thread.is_alive(), "the pass went on without waiting for the writer"
        writer.commit()
    thread.join(timeout=WRITER_WAIT_SECONDS + 30)
    assert "result" in out, "the pass did not finish"
    with store.factory() as s:
        waiting = set(s.scalars(select(MatchBacklog.item_id).where(MatchBacklog.kind == "posting")))
    # Neither posting has a counterpart: both wait, and the early one was not skipped.
    assert waiting == {early_id, later.id}


def test_a_transaction_in_another_database_does_not_hold_a_pass_up(store: Store) -> None:
    holding = store.holding()
    store.posting(holding, 900)
    admin_url = postgres_admin_url()
    assert admin_url is not None
    elsewhere = make_engine(admin_url)
    try:
        with elsewhere.connect() as other:
            other.begin()
            other.execute(text("SELECT pg_current_xact_id()"))  # it holds a transaction id
            # Held open until the pass is over: a pass waiting for it would wait its whole
            # WRITER_WAIT_SECONDS and say it gave up on a writer still running.
            with structlog.testing.capture_logs() as logs:
                result = run_pass(store.factory, POLICY, now=at(60), publish=False)
            other.rollback()
    finally:
        elsewhere.dispose()
    assert not result.skipped
    gave_up = [e for e in logs if e["event"] == "matching.writers_still_running"]
    assert gave_up == [], "the pass waited for a transaction of another database"
