"""Limits for the reconciled facts, on SQLite and PostgreSQL: groups go whole, or not at all.

The history (reconciled_world.py) was made by recon's own intake and passes. With every limit
set, the settled groups past their age leave as units (match rows, items, a transfer's history
and intents), and nothing unmatched, under an open alert, inside the matching window, or still
read by the balance-drift check is touched; the archive reads back to exactly what left; a pass
and the balance check afterwards raise no alert that was not there before.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Table, delete, select, text
from sqlalchemy.orm import Session, sessionmaker

from foundation import RetentionSettings, load_settings
from reconciliation import pass_lease, run_pass
from reconciliation.ledger_audit.ledger import read_pruned_through
from reconciliation.retention import runner
from reconciliation.retention.archive import read_archive
from reconciliation.retention.runner import PruneResult, run_retention
from reconciliation.retention.vacuum import REWRITTEN
from reconciliation.store import tables
from reconciliation.store.db import transaction
from reconciliation.store.models import (
    Alert,
    BalanceCheck,
    Lease,
    Match,
    Posting,
)
from reconciliation.store.types import utcnow
from tests.integration.retention.reconciled_world import (
    LIMIT_DAYS,
    LIMITS,
    NOW,
    POLICY,
    T0,
    World,
    build_world,
    settle_after_prune,
)
from workers import build_runtime
from workers.runtime import install_runtime, uninstall_runtime

TABLES: dict[str, Table] = {
    table.name: table
    for table in (
        tables.balance_snapshots,
        tables.balance_checks,
        tables.matches,
        tables.postings,
        tables.notifications,
        tables.transfers,
        tables.transfer_changes,
        tables.transfer_intents,
        tables.outbound_requests,
        tables.deliveries,
    )
}


#: What must be gone after a prune with every limit set, and what must stay.
GONE = {"settled", "credit", "lag_old"}
KEPT = {"silent", "altered", "unchecked", "lag_new", "recent", "in_grace"}
#: Limits far below every age in the world (about a minute and a half).
TINY = 0.001


@pytest.fixture
def world(session_factory: sessionmaker[Session]) -> World:
    return build_world(session_factory)


def prune(
    factory: sessionmaker[Session], settings: RetentionSettings = LIMITS, **extra: Any
) -> PruneResult:
    options: dict[str, Any] = {
        "match_window_seconds": POLICY.match_window_seconds,
        "projection_grace_seconds": POLICY.projection_grace_seconds,
        "now": NOW,
    }
    return run_retention(factory, settings, **(options | extra))


def everything(factory: sessionmaker[Session]) -> dict[str, dict[int, dict[str, Any]]]:
    with factory() as s:
        return {
            name: {row.id: dict(row._mapping) for row in s.execute(select(table))}
            for name, table in TABLES.items()
        }


def open_alerts(factory: sessionmaker[Session]) -> set[tuple[str, str]]:
    with factory() as s:
        return {
            (a.kind, a.fingerprint)
            for a in s.scalars(select(Alert).where(Alert.state.in_(("open", "acknowledged"))))
        }


def test_limits_remove_settled_groups_whole_and_keep_what_is_protected(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    before = everything(session_factory)
    result = prune(session_factory)
    after = everything(session_factory)

    postings = {name for name, ids in world.postings.items() if set(ids) & set(after["postings"])}
    assert set(world.postings) - postings == GONE
    assert postings == KEPT
    notes = {name for name, i in world.notifications.items() if i in after["notifications"]}
    assert set(world.notifications) - notes == GONE | {"moneyless"}
    assert {n for n in world.transfers if world.transfers[n] in after["transfers"]} == set()
    assert not after["transfer_changes"] and not after["transfer_intents"]
    assert [r["state"] for r in after["outbound_requests"].values()] == ["sent"], (
        "the transfers' closed key records went first; the open one stays"
    )

    for row in after["matches"].values():  # no match row names an item that is gone
        assert row["posting_id"] is None or row["posting_id"] in after["postings"], row
        assert row["notification_id"] is None or row["notification_id"] in after["notifications"]
        assert row["transfer_id"] is None or row["transfer_id"] in after["transfers"], row
    gone_rows = set(before["matches"]) - set(after["matches"])
    assert len(gone_rows) == 4  # the transfer's two legs, the credit, the lagging credit
    assert result.removed["matches"] == 4 and result.removed["postings"] == 4

    internal = world.holdings["internal"].id
    snapshots_kept = {
        r["observed_at"] for r in after["balance_snapshots"].values() if r["holding_id"] == internal
    }
    assert snapshots_kept == {T0, NOW - timedelta(hours=1)}, "a change the same day is gone"
    with session_factory() as s:
        for name in ("internal", "external", "lagging"):
            assert read_pruned_through(s, world.holdings[name].id) == T0 + timedelta(seconds=1)
        assert read_pruned_through(s, world.holdings["unchecked"].id) is None


def test_a_pass_and_the_balance_check_after_pruning_raise_no_new_alert(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    alerts = open_alerts(session_factory)
    assert {kind for kind, _ in alerts} == {"posting_without_notification", "amount_mismatch"}
    prune(session_factory)
    settle_after_prune(session_factory, world)
    assert open_alerts(session_factory) == alerts
    with session_factory() as s:
        latest = {
            c.holding_id: c
            for c in s.scalars(select(BalanceCheck).order_by(BalanceCheck.observed_at))
        }
    checked_at = {name: latest[h.id].observed_at for name, h in world.holdings.items()}
    assert checked_at == dict.fromkeys(world.holdings, NOW), "a holding was left unchecked"
    assert all(c.drift_minor == 0 for c in latest.values())


def test_the_check_would_see_a_posting_it_still_reads_gone(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    """The control of the test above: removing the lagging holding's newer posting (which its
    next check adds to the sum) is exactly what the drift check notices."""
    lag_new = world.postings["lag_new"][0]
    with transaction(session_factory) as s:
        s.execute(delete(Match).where(Match.posting_id == lag_new))
        s.execute(delete(Posting).where(Posting.id == lag_new))
    settle_after_prune(session_factory, world)
    assert "balance_mismatch" in {kind for kind, _ in open_alerts(session_factory)}


def test_a_holding_summed_from_nothing_after_pruning_starts_from_what_was_removed(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    """A rebuild checks every holding afresh: with its balance checks gone, a holding's posted
    sum is built from nothing, so it must start from the net of the postings retention
    removed, or every pruned holding would drift by exactly that."""
    before = {kind for kind, _ in open_alerts(session_factory)}
    prune(session_factory)
    with transaction(session_factory) as s:
        s.execute(delete(BalanceCheck))
    settle_after_prune(session_factory, world)
    assert {kind for kind, _ in open_alerts(session_factory)} == before
    with session_factory() as s:
        drifts = {c.holding_id: c.drift_minor for c in s.scalars(select(BalanceCheck))}
    assert set(drifts) == {h.id for h in world.holdings.values()}
    assert set(drifts.values()) == {0}


def test_the_archive_reads_back_exactly_what_left_and_a_dry_run_counts_it(
    world: World, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    before = everything(session_factory)
    dry = prune(session_factory, dry_run=True)
    assert everything(session_factory) == before, "a dry run changed the store"
    real = prune(session_factory, archive_dir=tmp_path)
    assert real.removed == dry.removed
    after = everything(session_factory)
    archived: dict[str, dict[int, dict[str, Any]]] = {}
    for path in real.archived:
        table = path.name.split("-")[0]
        if table in TABLES:
            archived[table] = {row["id"]: row for row in read_archive(path, TABLES[table])}
    for row in before["notifications"].values():  # a removed delivery's pointer is cleared first
        if row["delivery_pk"] not in after["deliveries"]:
            row["delivery_pk"] = None
    for name, rows in before.items():
        removed = {i: r for i, r in rows.items() if i not in after[name]}
        assert archived.get(name, {}) == removed, name
    assert archived["postings"] and archived["transfer_intents"], "nothing archived: no proof"
    again = prune(session_factory)
    assert sum(again.removed.values()) == 0


def test_a_kind_without_a_limit_keeps_every_group_it_belongs_to(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    before = everything(session_factory)
    prune(session_factory, replace(LIMITS, notification_days=None))
    after = everything(session_factory)
    assert after["matches"] == before["matches"]
    assert after["postings"] == before["postings"]
    assert world.transfers["denied"] not in after["transfers"], "a denied transfer has no group"
    assert world.transfers["settled"] in after["transfers"]


def tiny_limits() -> RetentionSettings:
    return replace(
        LIMITS,
        delivery_days=TINY,
        outbound_request_days=TINY,
        posting_days=TINY,
        transfer_days=TINY,
        notification_days=TINY,
        match_days=TINY,
    )


def test_nothing_inside_the_matching_window_goes_whatever_the_limits(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    before = everything(session_factory)
    result = prune(session_factory, tiny_limits(), match_window_seconds=40 * 86_400)
    after = everything(session_factory)
    for kind in ("postings", "transfers", "notifications", "matches"):
        assert after[kind] == before[kind], kind
    assert result.cutoffs["postings"] == NOW - timedelta(days=40)


def test_a_posting_the_checks_lag_explanation_reads_stays(
    world: World, session_factory: sessionmaker[Session]
) -> None:
    """With limits and window of a minute, what stays of the recent history is only what the
    balance check reads: `in_grace` (posted inside the projection grace before the check's
    snapshot, which explains the difference by it); a pass then raises nothing new."""
    alerts = open_alerts(session_factory)
    prune(session_factory, tiny_limits(), match_window_seconds=60)
    with session_factory() as s:
        kept = set(s.scalars(select(Posting.id)))
    assert world.postings["in_grace"][0] in kept
    assert world.postings["recent"][0] not in kept
    run_pass(session_factory, POLICY, now=NOW + timedelta(minutes=1), publish=False)
    assert open_alerts(session_factory) == alerts


def test_a_running_pass_defers_the_reconciled_facts_only(
    world: World, session_factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "PASS_WAIT_SECONDS", 0.5)
    owner = pass_lease.lease_owner()
    assert pass_lease.acquire(session_factory, owner, utcnow())  # the lease runs on real time
    try:
        held = prune(session_factory, hold_pass=True)
    finally:
        pass_lease.release(session_factory, owner)
    assert held.deferred
    assert "postings" not in held.removed and held.removed["deliveries"] > 0
    free = prune(session_factory, hold_pass=True)
    assert not free.deferred and free.removed["postings"] == 4
    with session_factory() as s:
        assert s.get(Lease, pass_lease.PASS_LEASE) is None, "the lease was kept"


def test_every_postgres_table_that_lost_rows_is_vacuumed(
    world: World, session_factory: sessionmaker[Session], db_url: str
) -> None:
    """Autovacuum is off on the test server, as on this machine's: only the prune's own VACUUM
    can have marked the dead rows free (SQLite reuses its free pages by itself: nothing runs)."""
    with session_factory() as s:
        started = s.scalar(text("SELECT CURRENT_TIMESTAMP"))
    result = prune(session_factory)
    touched = {table for table, rows in result.removed.items() if rows}
    assert {"postings", "matches", "transfers", "deliveries"} <= touched
    if not db_url.startswith("postgresql"):
        assert result.vacuumed == []
        return
    assert set(result.vacuumed) == touched | {"notifications"} | set(REWRITTEN)
    with session_factory() as s:
        stats = {
            row.relname: row
            for row in s.execute(
                text(
                    "SELECT relname, last_vacuum, last_analyze, n_dead_tup FROM pg_stat_user_tables"
                )
            )
        }
    for table in result.vacuumed:
        assert stats[table].last_vacuum >= started, table
        assert stats[table].last_analyze >= started, table


def test_the_scheduled_job_reads_the_limits_from_the_environment(
    world: World,
    session_factory: sessionmaker[Session],
    base_env: dict[str, str],
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workers.actors import prune as prune_job

    kinds = ("DELIVERIES", "OUTBOUND_REQUESTS", "POSTINGS", "TRANSFERS", "NOTIFICATIONS")
    limits = {f"RECON_RETAIN_{kind}_DAYS": str(LIMIT_DAYS) for kind in (*kinds, "MATCHES")}
    env = base_env | {"DATABASE_URL": db_url, "RECON_PROJECTION_GRACE_SECONDS": "60"} | limits
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    install_runtime(build_runtime(load_settings(env), clock=lambda: NOW))
    try:
        prune_job.fn()
        prune_job.fn()  # a message delivered twice removes nothing more
    finally:
        uninstall_runtime()
    with session_factory() as s:
        kept = set(s.scalars(select(Posting.id)))
    assert {n for n, ids in world.postings.items() if set(ids) & kept} == KEPT
