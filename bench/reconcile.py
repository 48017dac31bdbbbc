"""Benchmark: a full reconciliation pass over 1M postings + 1M transfers + 1M notifications.

    .venv/bin/python bench/reconcile.py                      # PostgreSQL, then SQLite
    .venv/bin/python bench/reconcile.py --only postgres --size 1000000
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

For each database it
1. generates the three streams straight into a fresh store (COPY on PostgreSQL, executemany on
   SQLite): 400k settled transfers (two legs each, one TRANSACTION_COMPLETED), 400k failed
   transfers (TRANSACTION_FAILED), 200k denied transfers (no webhook), 200k inbound credits
   (PAYMENT_RECEIVED; one in four without a receiptRef, so rule 3 matches it by account number,
   amount and time window), and a consistent balance snapshot per holding (1,000 holdings);
2. times a bare SQL hash join of the same keys (notifications -> postings by receiptRef,
   -> transfers by transferRef) into a new table: the floor a pass is measured against; on
   PostgreSQL also the same join INSERTed into a table shaped like `matches` with its four
   indexes (ratio_write_to_bare_join): what writing the rows alone costs;
3. runs a full pass from scratch in a fresh interpreter (so its peak RSS is the pass's own),
   then adds 10,000 records (2,500 settled transfers: transfer, two legs, one notification) and
   times the incremental pass;
4. prints the figures and the ratio of the full pass to the bare join.

The sizes scale with --size (postings = transfers = notifications = size).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reconcile_data import (  # noqa: E402 - found through the path set just above
    Shape,
    append_records,
    generate,
    load_postgres,
    load_sqlite_url,
    load_with_snapshots,
)

# --- measuring ---------------------------------------------------------------------------


def run_pass_in_child(url: str, now: datetime) -> dict[str, Any]:
    """One pass in a fresh interpreter: its wall time and its own peak RSS."""
    out = subprocess.run(
        [sys.executable, __file__, "_pass", url, now.isoformat()],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if os.environ.get("BENCH_TRACE"):
        print(out.stderr, file=sys.stderr)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def child_pass(url: str, now_text: str) -> None:
    import logging

    import structlog

    from reconciliation.policy import ReconcilePolicy
    from reconciliation.reconcile import run_pass
    from reconciliation.store.db import make_engine, make_session_factory

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    engine = make_engine(url)
    if os.environ.get("BENCH_TRACE"):
        _trace_slow_statements(engine)
    if os.environ.get("BENCH_EXPLAIN") and engine.dialect.name == "postgresql":
        _explain_statements(engine, float(os.environ["BENCH_EXPLAIN"]))
    factory = make_session_factory(engine)
    started = time.perf_counter()
    result = run_pass(
        factory, ReconcilePolicy(), now=datetime.fromisoformat(now_text), publish=False
    )
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": peak_kb / 1024,
                "matched": dict(result.matched.rows_by_rule),
                "ambiguities": len(result.matched.ambiguities),
                "alerts_opened": len(result.alerts.opened),
                "phases": result.seconds,
            }
        )
    )


def _trace_slow_statements(engine: Any) -> None:
    """BENCH_TRACE=1: every statement slower than 0.1 s, on stderr, to see where time goes."""
    from sqlalchemy import event

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: Any, *_: Any) -> None:
        conn.info.setdefault("started", []).append(time.perf_counter())

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        took = time.perf_counter() - conn.info["started"].pop()
        if took > 0.1:
            print(f"{took:6.2f}s {' '.join(statement.split())[:160]}", file=sys.stderr)


def _explain_statements(engine: Any, min_ms: float) -> None:
    """BENCH_EXPLAIN=<ms>: the plan (ANALYZE, BUFFERS) of every statement slower than that, on
    stderr, through auto_explain at NOTICE level: the plans the pass really ran, not a replay."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _load(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.add_notice_handler(
            lambda notice: print(notice.message_primary, file=sys.stderr)
        )
        with dbapi_connection.cursor() as cur:
            cur.execute("LOAD 'auto_explain'")
            for name, value in (
                ("log_min_duration", str(int(min_ms))),
                ("log_analyze", "on"),
                ("log_buffers", "on"),
                ("log_timing", "on"),
                ("log_nested_statements", "on"),
                ("log_level", "notice"),
            ):
                cur.execute(f"SET auto_explain.{name} = '{value}'")
        dbapi_connection.commit()


def hash_join(url: str) -> float:
    from sqlalchemy import text

    from reconciliation.store.db import make_engine

    engine = make_engine(url)
    sql = (
        "CREATE TABLE bench_join AS SELECT n.id AS notification_id, p.id AS posting_id, "
        "t.id AS transfer_id FROM notifications n "
        "LEFT JOIN postings p ON p.receipt_ref = n.receipt_ref "
        "LEFT JOIN transfers t ON t.transfer_ref = n.transfer_ref"
    )
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS bench_join"))
    started = time.perf_counter()
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL enable_nestloop = off"))  # a hash join, as advertised
        conn.execute(text(sql))
    seconds = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE bench_join"))
    engine.dispose()
    return seconds


def bare_write(url: str) -> float:
    """PostgreSQL: the same join's rows INSERTed into a table shaped like `matches`, with its
    indexes: what writing the match rows alone costs, the part of a pass no query plan saves."""
    from sqlalchemy import text

    from reconciliation.store.db import make_engine

    engine = make_engine(url)
    sql = (
        "INSERT INTO bench_write (rule, posting_id, transfer_id, notification_id, matched_at, "
        "matched_by) SELECT 'bench', p.id, t.id, n.id, now(), 'bench' FROM notifications n "
        "LEFT JOIN postings p ON p.receipt_ref = n.receipt_ref "
        "LEFT JOIN transfers t ON t.transfer_ref = n.transfer_ref"
    )
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS bench_write"))
        conn.execute(text("CREATE TABLE bench_write (LIKE matches INCLUDING ALL)"))
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL enable_nestloop = off"))
        conn.execute(text(sql))
    seconds = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE bench_write"))
    engine.dispose()
    return seconds


def bench(kind: str, size: int) -> dict[str, Any]:
    from migrations import runner as migrate
    from reconciliation.store.db import make_engine

    shape = Shape(size)
    cleanup: Any = None
    if kind == "postgres":
        from sqlalchemy import text

        admin = os.environ.get(
            "BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
        )
        admin = admin.replace("postgresql://", "postgresql+psycopg://", 1)
        name = f"recon_bench_reconcile_{uuid.uuid4().hex[:8]}"
        admin_engine = make_engine(admin, isolation_level="AUTOCOMMIT")
        with admin_engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = admin.rpartition("/")[0] + "/" + name

        def cleanup() -> None:
            with admin_engine.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin_engine.dispose()
    else:
        folder = Path(tempfile.mkdtemp(prefix="recon-bench-reconcile-"))
        url = f"sqlite:///{folder / 'bench.db'}"

        def cleanup() -> None:
            for f in folder.iterdir():
                f.unlink()
            folder.rmdir()

    try:
        migrate.upgrade(url)
        started = time.perf_counter()
        full = generate(shape)
        loader = load_postgres if kind == "postgres" else load_sqlite_url
        load_with_snapshots(loader, url, full)
        load_seconds = time.perf_counter() - started

        join_seconds = hash_join(url)
        write_seconds = bare_write(url) if kind == "postgres" else None
        now = full["last"] + timedelta(days=1)
        first = run_pass_in_child(url, now)

        extra = generate(shape, offset=size, settled_only=2_500)
        started = time.perf_counter()
        append_records(kind, url, extra)
        append_seconds = time.perf_counter() - started
        second = run_pass_in_child(url, now + timedelta(seconds=30))
        records = 3 * size
        return {
            "database": kind,
            "postings": size,
            "transfers": size,
            "notifications": size,
            "load_seconds": round(load_seconds, 1),
            "bare_hash_join_seconds": round(join_seconds, 2),
            "full_pass_seconds": round(first["seconds"], 2),
            "full_pass_phases": {k: round(v, 2) for k, v in first["phases"].items()},
            "records_per_minute": int(records / first["seconds"] * 60),
            "full_pass_peak_rss_mb": round(first["peak_mb"], 1),
            "matched_rows": first["matched"],
            "ambiguities": first["ambiguities"],
            "alerts_opened": first["alerts_opened"],
            "ratio_pass_to_bare_join": round(first["seconds"] / join_seconds, 2),
            "bare_join_and_write_seconds": write_seconds and round(write_seconds, 2),
            "ratio_write_to_bare_join": write_seconds and round(write_seconds / join_seconds, 2),
            "incremental_records": 10_000,
            "incremental_append_seconds": round(append_seconds, 2),
            "incremental_pass_seconds": round(second["seconds"], 2),
            "incremental_phases": {k: round(v, 3) for k, v in second["phases"].items()},
            "incremental_matched_rows": second["matched"],
            "incremental_peak_rss_mb": round(second["peak_mb"], 1),
        }
    finally:
        cleanup()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_pass":
        child_pass(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000, help="records per stream")
    parser.add_argument(
        "--sqlite-size", type=int, default=None, help="records per stream on SQLite"
    )
    parser.add_argument("--only", choices=["postgres", "sqlite"])
    args = parser.parse_args()
    kinds = [args.only] if args.only else ["postgres", "sqlite"]
    for kind in kinds:
        size = args.sqlite_size if kind == "sqlite" and args.sqlite_size else args.size
        figures = bench(kind, size)
        print(json.dumps(figures, indent=2), flush=True)


if __name__ == "__main__":
    main()
