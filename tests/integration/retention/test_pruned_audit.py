"""The ledger audit after retention removed postings: pruned is not missing, lost still is.

A holding's 40 postings are read from the sandbox (in-process, over real HTTP) by the real
poller, reconciled (each matched to its notification, the balance checked after the 30th) and
the 30 older ones pruned. The gateway still shows all 40: the audit must count the 30 as
pruned, report nothing missing, and still report a posting lost after the pruned horizon.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select

from reconciliation.ledger_audit.compare import MISSING
from reconciliation.ledger_audit.ledger import read_pruned_through
from reconciliation.ledger_audit.run import audit_ledger, fetch_from
from reconciliation.matching.backlog import watermark_name
from reconciliation.retention.runner import run_retention
from reconciliation.store import watermarks
from reconciliation.store.db import transaction
from reconciliation.store.models import (
    BalanceCheck,
    BalanceSnapshot,
    Holding,
    Match,
    Notification,
    Posting,
)
from reconciliation.store.types import utcnow
from sandbox.variants import PRESETS
from tests.integration.retention.reconciled_world import LIMITS
from tests.integration.workers.inprocess_sandbox import (
    InProcessSandbox,
    StepClock,
    inprocess_sandbox,
    read_until_caught_up,
    reader_settings,
)
from workers import Runtime, build_runtime, release_runtime
from workers.actors.holdings import discover

PAGE = 10
#: Postings read, and how many of the oldest are behind the balance check (and so may go).
POSTINGS, BEHIND_CHECK = 40, 30


@pytest.fixture
def sandbox() -> Iterator[InProcessSandbox]:
    with inprocess_sandbox(PRESETS["recon"]) as made:
        yield made


@pytest.fixture
def rt(base_env: dict[str, str], db_url: str, sandbox: InProcessSandbox) -> Iterator[Runtime]:
    sandbox.reset(PRESETS["recon"], seed=7)
    ref = sandbox.new_holding()
    # One second apart, then ten minutes after the 30th: the check falls in that gap.
    offsets = [1_000] * BEHIND_CHECK + [600_000] + [1_000] * (POSTINGS - BEHIND_CHECK - 1)
    sandbox.add_postings(ref, offsets, anywhere_in_ties=False)
    env = {**base_env, "DATABASE_URL": db_url}
    made = build_runtime(reader_settings(env, PAGE), transport=sandbox.transport, clock=StepClock())
    discover(made)
    with made.sessions() as s:
        holding_id = s.scalar(select(Holding.id).where(Holding.holding_ref == uuid.UUID(ref)))
    assert holding_id is not None
    read_until_caught_up(made, holding_id, StepClock())
    try:
        yield made
    finally:
        release_runtime(made)


def reconcile_by_hand(rt: Runtime) -> list[Posting]:
    """Every posting matched to a notification saying the same, the matches drift-checked, and
    the balance checked on a snapshot three minutes after the 30th posting."""
    with transaction(rt.sessions) as s:
        rows = list(s.scalars(select(Posting).order_by(Posting.posted_at, Posting.id)))
        for p in rows:
            note = Notification(
                event_id=f"evt-{p.id}",
                event_type="PAYMENT_RECEIVED",
                receipt_ref=p.receipt_ref,
                amount_minor=p.amount_minor,
                currency=p.currency,
                occurred_at=p.posted_at,
                created_at=p.posted_at,
            )
            s.add(note)
            s.flush()
            s.add(
                Match(
                    rule="receipt_ref",
                    posting_id=p.id,
                    notification_id=note.id,
                    matched_at=p.posted_at,
                )
            )
        at = rows[BEHIND_CHECK - 1].posted_at + timedelta(minutes=3)
        settled = sum(p.amount_minor for p in rows[:BEHIND_CHECK])
        snap = BalanceSnapshot(
            holding_id=rows[0].holding_id,
            settled_minor=settled,
            available_minor=settled,
            reserved_minor=0,
            observed_at=at,
        )
        s.add(snap)
        s.flush()
        s.add(
            BalanceCheck(
                snapshot_id=snap.id,
                holding_id=snap.holding_id,
                observed_at=at,
                settled_minor=settled,
                posted_minor=settled,
                drift_minor=0,
                postings_through_id=max(p.id for p in rows),
                checked_at=at,
            )
        )
        s.flush()
        now = utcnow()
        for stream, model in (("posting", Posting), ("notification", Notification)):
            top = int(s.scalar(select(func.max(model.id))) or 0)
            watermarks.write(s, watermark_name(stream), top, now)
        watermarks.write(
            s, watermarks.MATCHES_CHECKED, int(s.scalar(select(func.max(Match.id))) or 0), now
        )
    return rows


def test_audit_after_pruning_finds_nothing_missing_but_what_was_lost(rt: Runtime) -> None:
    audit = audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE)
    assert (audit.status, audit.postings) == ("clean", POSTINGS)
    rows = reconcile_by_hand(rt)
    now = max(utcnow(), rows[-1].posted_at) + timedelta(days=30)
    result = run_retention(
        rt.sessions,
        LIMITS,
        match_window_seconds=3600,
        projection_grace_seconds=120,
        now=now,
    )
    assert result.removed["postings"] == BEHIND_CHECK
    with rt.sessions() as s:
        assert read_pruned_through(s, rows[0].holding_id) == rows[BEHIND_CHECK - 1].posted_at

    after = audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE)
    assert (after.status, after.total_divergences) == ("clean", 0), after.as_dict()
    assert after.holdings[0].pruned == BEHIND_CHECK
    assert after.holdings[0].gateway.key == after.holdings[0].store.key

    lost = rows[BEHIND_CHECK + 4]  # kept by retention, then lost: the audit must still say so
    with transaction(rt.sessions) as s:
        s.execute(delete(Match).where(Match.posting_id == lost.id))
        s.execute(delete(Posting).where(Posting.id == lost.id))
    found = audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE)
    assert found.counts[MISSING] == 1
    assert [d.line_ref for d in found.divergences] == [lost.line_ref]
