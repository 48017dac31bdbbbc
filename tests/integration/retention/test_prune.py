"""`recon prune` and the scheduled prune job, on SQLite and PostgreSQL.

The store (retention_store.py) holds records of every age and standing. After a prune, what is
past its age and safe is gone, and nothing unmatched, named by an open alert, or inside the
matching window was touched; the archive reads back to exactly the rows that left; a second
run removes nothing; a prune stopped half-way leaves a store in which each batch happened whole.
"""

from __future__ import annotations

import json
import stat
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Table, select
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from recon.cli.main import cli
from reconciliation.retention.archive import ArchiveError, read_archive
from reconciliation.retention.runner import run_retention
from reconciliation.store import tables
from reconciliation.store.models import (
    Notification,
)
from tests.integration.retention.retention_store import (
    NOW,
    SNAPSHOT_DAYS,
    Built,
    build,
    snapshot_balance,
    snapshot_time,
)
from workers import build_runtime
from workers.runtime import install_runtime, uninstall_runtime

TABLES: dict[str, Table] = {
    table.name: table
    for table in (
        tables.deliveries,
        tables.outbound_requests,
        tables.balance_snapshots,
        tables.balance_checks,
        tables.transfer_changes,
    )
}


@pytest.fixture
def env(base_env: dict[str, str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {**base_env, "DATABASE_URL": db_url}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def built(session_factory: sessionmaker[Session]) -> Built:
    return build(session_factory)


def prune_cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["prune", "--json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def everything(factory: sessionmaker[Session]) -> dict[str, dict[int, dict[str, Any]]]:
    """Every row of the tables retention touches, by table and id."""
    with factory() as s:
        return {
            name: {row.id: dict(row._mapping) for row in s.execute(select(table))}
            for name, table in TABLES.items()
        }


def expected_snapshot_hours() -> set[int]:
    """Hours whose snapshot must stay: by the rule, worked out here from the hours alone."""
    cutoff = NOW - timedelta(days=2)
    kept = set()
    for hour in range(SNAPSHOT_DAYS * 24):
        at, before = snapshot_time(hour), snapshot_time(hour - 1)
        if (
            hour == 0
            or at >= cutoff
            or snapshot_balance(hour) != snapshot_balance(hour - 1)
            or at.date() != before.date()
            or hour == 30  # its check found drift
        ):
            kept.add(hour)
    return kept


def test_dry_run_counts_what_prune_then_removes(
    env: dict[str, str], built: Built, session_factory: sessionmaker[Session]
) -> None:
    before = everything(session_factory)
    dry = prune_cli("--dry-run")
    assert everything(session_factory) == before, "a dry run changed the store"
    assert dry["dryRun"] is True and dry["archived"] == []

    real = prune_cli()
    assert real["removed"] == dry["removed"]
    assert real["removed"]["deliveries"] == 4  # three matched, one without a notification
    assert real["removed"]["outbound_requests"] == 2
    assert real["removed"]["transfer_changes"] == 2  # the middle two of the one terminal


def test_nothing_unmatched_alerted_or_recent_is_pruned(
    env: dict[str, str], built: Built, session_factory: sessionmaker[Session]
) -> None:
    prune_cli()
    after = everything(session_factory)
    gone = {k for k, v in built.deliveries.items() if v not in after["deliveries"]}
    assert gone == {"matched0", "matched1", "matched2", "no_notification"}
    gone = {k for k, v in built.requests.items() if v not in after["outbound_requests"]}
    assert gone == {"done", "failed"}
    changes: dict[int, list[str]] = {}
    for row in sorted(after["transfer_changes"].values(), key=lambda r: r["id"]):
        changes.setdefault(row["transfer_id"], []).append(row["status"])
    assert changes[built.transfers["terminal"]] == ["step0", "step3"]
    for kept in ("backlog", "alerted", "moving", "recent"):
        assert len(changes[built.transfers[kept]]) == 4, kept
    with session_factory() as s:
        pointers = s.scalars(select(Notification.delivery_pk)).all()
    assert None in pointers  # the notifications of removed deliveries stay, pointer cleared
    assert all(p is None or p in after["deliveries"] for p in pointers)


def test_snapshot_thinning_keeps_changes_and_one_per_day(
    env: dict[str, str], built: Built, session_factory: sessionmaker[Session]
) -> None:
    prune_cli()
    after = everything(session_factory)
    start = snapshot_time(0)
    hours = {
        round((row["observed_at"] - start).total_seconds() / 3600)
        for row in after["balance_snapshots"].values()
    }
    assert hours == expected_snapshot_hours()
    assert {r["snapshot_id"] for r in after["balance_checks"].values()} == set(
        after["balance_snapshots"]
    ), "a check outlived its snapshot, or a kept snapshot lost its check"


def test_archive_reads_back_exactly_what_was_removed_and_a_second_run_removes_nothing(
    env: dict[str, str], built: Built, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    before = everything(session_factory)
    first = prune_cli("--archive", str(tmp_path))
    after = everything(session_factory)
    archived: dict[str, dict[int, dict[str, Any]]] = {}
    for path in map(Path, first["archived"]):
        table = path.name.split("-")[0]
        archived[table] = {row["id"]: row for row in read_archive(path, TABLES[table])}
    for name, rows in before.items():
        removed = {i: r for i, r in rows.items() if i not in after[name]}
        assert archived.get(name, {}) == removed, name
    assert archived["deliveries"], "the test removed no delivery: it would prove nothing"

    second = prune_cli("--archive", str(tmp_path / "again"))
    assert sum(second["removed"].values()) == 0
    assert second["archived"] == []
    assert everything(session_factory) == after


def test_an_interrupted_prune_leaves_whole_batches(
    env: dict[str, str], built: Built, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    settings = load_settings()
    before = everything(session_factory)
    run = NOW.strftime("%Y%m%dT%H%M%S%fZ")
    (tmp_path / f"balance_checks-{run}.jsonl.gz").mkdir()  # the snapshot batch cannot archive
    seen: list[tuple[str, int]] = []
    with pytest.raises(ArchiveError):
        run_retention(
            session_factory,
            settings.retention,
            match_window_seconds=3600,
            projection_grace_seconds=120,
            now=NOW,
            archive_dir=tmp_path,
            batch_rows=2,
            on_batch=lambda kind, n: seen.append((kind, n)),
        )
    after = everything(session_factory)
    assert [k for k, _ in seen][:2] == ["deliveries", "deliveries"], seen
    assert after["balance_snapshots"] == before["balance_snapshots"]
    assert after["balance_checks"] == before["balance_checks"]
    assert not (tmp_path / f"balance_snapshots-{run}.jsonl.gz").exists()
    archived = list(read_archive(tmp_path / f"deliveries-{run}.jsonl.gz", TABLES["deliveries"]))
    assert {r["id"] for r in archived} == set(before["deliveries"]) - set(after["deliveries"])

    # Run again, unhindered: it finishes what the first run left.
    (tmp_path / f"balance_checks-{run}.jsonl.gz").rmdir()
    run_retention(
        session_factory,
        settings.retention,
        match_window_seconds=3600,
        projection_grace_seconds=120,
        now=NOW,
    )
    full = prune_cli("--dry-run")
    assert sum(full["removed"].values()) == 0


def test_the_scheduled_job_prunes_with_the_same_guarantees(
    env: dict[str, str], built: Built, session_factory: sessionmaker[Session]
) -> None:
    from workers import configured_ticks
    from workers.actors import prune

    settings = load_settings()
    assert {t.name: t.seconds for t in configured_ticks(settings)}["prune"] == 3600.0
    install_runtime(build_runtime(settings, clock=lambda: NOW))
    try:
        prune.fn()
        prune.fn()  # a message delivered twice removes nothing more
    finally:
        uninstall_runtime()
    after = everything(session_factory)
    gone = {k for k, v in built.deliveries.items() if v not in after["deliveries"]}
    assert gone == {"matched0", "matched1", "matched2", "no_notification"}
    assert {k for k, v in built.requests.items() if v not in after["outbound_requests"]} == {
        "done",
        "failed",
    }


def test_archive_folders_are_0700_and_its_files_0600(
    env: dict[str, str], built: Built, tmp_path: Path
) -> None:
    """The archive holds raw delivery and outbound bodies, as the store (0600) does. Before:
    folders 0755 and files 0644, readable by every user of the machine."""
    folder = tmp_path / "archives" / "2026"
    result = prune_cli("--archive", str(folder))
    assert result["archived"], "nothing was archived: the test would prove nothing"
    for made in (tmp_path / "archives", folder):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made
    for path in map(Path, result["archived"]):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
