"""Benchmark: a full reconciliation pass over 1M postings + 1M transfers + 1M notifications.

    .venv/bin/python bench/reconcile.py                      # PostgreSQL, then SQLite
    .venv/bin/python bench/reconcile.py --only postgres --size 200000 --rounds 3 --explain
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

For each database it
1. generates the three streams straight into a fresh store (COPY on PostgreSQL, executemany on
   SQLite): 400k settled transfers (two legs each, one TRANSACTION_COMPLETED), 400k failed
   transfers (TRANSACTION_FAILED), 200k denied transfers (no webhook), 200k inbound credits
   (PAYMENT_RECEIVED; one in four without a receiptRef, so rule 3 matches it by account number,
   amount and time window), and a consistent balance snapshot per holding (1,000 holdings);
2. per round (--rounds): times a bare SQL hash join of the same keys (notifications ->
   postings by receiptRef, -> transfers by transferRef) into a new table, the floor a pass is
   measured against; on PostgreSQL also the same join INSERTed into a table shaped like
   `matches` with its indexes (ratio_write_to_bare_join): what writing the rows alone costs;
   then a full pass from scratch in a fresh interpreter (so its peak RSS is the pass's own),
   then adds 10,000 records (2,500 settled transfers: transfer, two legs, one notification) and
   times the incremental pass; between rounds, what the passes wrote is emptied again;
3. prints the figures: each round's ratio of the full pass to the bare join of that round, and
   min / median / max over the rounds; on PostgreSQL the same ratio in the server backends'
   CPU seconds too (read from /proc, so when the server runs on this machine), which other
   work on a shared machine disturbs far less; --cpu turns parallel workers off for both, so
   that figure counts all the work;
4. with --explain (PostgreSQL), one more round whose passes run under auto_explain: the plan
   (ANALYZE, BUFFERS) of every statement slower than --explain-ms, full pass then incremental,
   printed before the figures (its timings include auto_explain's overhead and are not used).

The sizes scale with --size (postings = transfers = notifications = size).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reconcile_data import (  # noqa: E402 - found through the path set just above
    Shape,
    generate,
)
from reconcile_load import (  # noqa: E402 - found through the path set just above
    append_records,
    load_postgres,
    load_sqlite_url,
    load_with_snapshots,
)
from reconcile_measures import (  # noqa: E402 - found through the path set just above
    bare_write,
    child_pass,
    hash_join,
    reset_store,
    run_pass_in_child,
)

#: Records added before each incremental pass (2,500 settled transfers: 4 records each).
INCREMENTAL_TRANSFERS = 2_500


@contextmanager
def fresh_store(kind: str) -> Iterator[str]:
    """A new, empty database of `kind`, migrated; dropped afterwards. Yields its URL."""
    from migrations import runner as migrate
    from reconciliation.store.db import make_engine

    cleanup: Callable[[], None]
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
        yield url
    finally:
        cleanup()


def spread(values: list[float], digits: int = 2) -> dict[str, float]:
    """min / median / max of a figure over the rounds."""
    return {
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
    }


def one_round(kind: str, url: str, shape: Shape, now: datetime, n: int) -> dict[str, Any]:
    """The bare join, the bare write, a full pass from scratch, 10,000 records, a pass."""
    join = hash_join(url)
    write_seconds = bare_write(url) if kind == "postgres" else None
    first = run_pass_in_child(url, now).figures
    extra = generate(
        shape, offset=shape.size + n * INCREMENTAL_TRANSFERS, settled_only=INCREMENTAL_TRANSFERS
    )
    started = time.perf_counter()
    append_records(kind, url, extra)
    append_seconds = time.perf_counter() - started
    second = run_pass_in_child(url, now + timedelta(seconds=30)).figures
    return {
        "join": join.seconds,
        "join_cpu": join.server_cpu,
        "write": write_seconds,
        "first": first,
        "append": append_seconds,
        "second": second,
    }


def explained_round(kind: str, url: str, shape: Shape, now: datetime, n: int, ms: float) -> None:
    """A full and an incremental pass under auto_explain; their plans on stdout."""
    reset_store(url)
    run = run_pass_in_child(url, now, explain_ms=ms)
    print(f"===== EXPLAIN (ANALYZE, BUFFERS): full pass ({kind}, statements over {ms} ms)")
    print(run.plans, flush=True)
    extra = generate(
        shape, offset=shape.size + n * INCREMENTAL_TRANSFERS, settled_only=INCREMENTAL_TRANSFERS
    )
    append_records(kind, url, extra)
    run = run_pass_in_child(url, now + timedelta(seconds=30), explain_ms=ms)
    print(f"===== EXPLAIN (ANALYZE, BUFFERS): incremental pass ({kind}, over {ms} ms)")
    print(run.plans, flush=True)


def bench(kind: str, size: int, rounds: int, explain_ms: float | None) -> dict[str, Any]:
    shape = Shape(size)
    with fresh_store(kind) as url:
        started = time.perf_counter()
        full = generate(shape)
        loader = load_postgres if kind == "postgres" else load_sqlite_url
        load_with_snapshots(loader, url, full)
        load_seconds = time.perf_counter() - started
        now = full["last"] + timedelta(days=1)
        done = []
        for n in range(rounds):
            if n:
                reset_store(url)
            done.append(one_round(kind, url, shape, now, n))
        if explain_ms is not None and kind == "postgres":
            explained_round(kind, url, shape, now, rounds, explain_ms)
    last = done[-1]
    first, second = last["first"], last["second"]
    ratios = [r["first"]["seconds"] / r["join"] for r in done]
    figures: dict[str, Any] = {
        "database": kind,
        "postings": size,
        "transfers": size,
        "notifications": size,
        "rounds": rounds,
        "load_seconds": round(load_seconds, 1),
        "ratio_pass_to_bare_join": spread(ratios),
        "bare_hash_join_seconds": spread([r["join"] for r in done]),
        "full_pass_seconds": spread([r["first"]["seconds"] for r in done]),
        "incremental_pass_seconds": spread([r["second"]["seconds"] for r in done], 3),
        "full_pass_peak_rss_mb": round(max(r["first"]["peak_mb"] for r in done), 1),
        "records_per_minute": int(
            3 * size / statistics.median(r["first"]["seconds"] for r in done) * 60
        ),
        "per_round": [
            {
                "join": round(r["join"], 2),
                "pass": round(r["first"]["seconds"], 2),
                "ratio": round(ratio, 2),
                "incremental": round(r["second"]["seconds"], 3),
            }
            for r, ratio in zip(done, ratios, strict=True)
        ],
        "full_pass_phases (last round)": {k: round(v, 2) for k, v in first["phases"].items()},
        "matched_rows": first["matched"],
        "ambiguities": first["ambiguities"],
        "alerts_opened": first["alerts_opened"],
        "incremental_records": 4 * INCREMENTAL_TRANSFERS,
        "incremental_append_seconds": round(last["append"], 2),
        "incremental_phases (last round)": {k: round(v, 3) for k, v in second["phases"].items()},
        "incremental_matched_rows": second["matched"],
        "incremental_peak_rss_mb": round(second["peak_mb"], 1),
    }
    cpu = [
        r["first"]["server_cpu"] / r["join_cpu"]
        for r in done
        if r["join_cpu"] and r["first"].get("server_cpu") is not None
    ]
    if cpu:
        # The same ratio in the server's CPU seconds: steadier than wall time on a shared
        # machine (with --cpu: no parallel workers, whose CPU is not counted).
        figures["ratio_pass_to_bare_join_server_cpu"] = spread(cpu)
        figures["full_pass_server_cpu_seconds"] = spread([r["first"]["server_cpu"] for r in done])
        figures["incremental_pass_server_cpu_seconds"] = spread(
            [r["second"]["server_cpu"] for r in done], 3
        )
    figures["full_pass_client_cpu_seconds"] = spread([r["first"]["client_cpu"] for r in done])
    figures["incremental_pass_client_cpu_seconds"] = spread(
        [r["second"]["client_cpu"] for r in done], 3
    )
    if kind == "postgres":
        writes = [r["write"] for r in done]
        figures["bare_join_and_write_seconds"] = spread(writes)
        figures["ratio_write_to_bare_join"] = spread([r["write"] / r["join"] for r in done])
    return figures


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
    parser.add_argument("--rounds", type=int, default=1, help="join + pass rounds per database")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="PostgreSQL: one more round printing each pass statement's EXPLAIN (ANALYZE, BUFFERS)",
    )
    parser.add_argument(
        "--explain-ms", type=float, default=10.0, help="with --explain: statements slower than this"
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="PostgreSQL: no parallel workers, so the server CPU ratio counts all the work",
    )
    args = parser.parse_args()
    if args.cpu:
        os.environ["PGOPTIONS"] = "-c max_parallel_workers_per_gather=0"
    kinds = [args.only] if args.only else ["postgres", "sqlite"]
    for kind in kinds:
        size = args.sqlite_size if kind == "sqlite" and args.sqlite_size else args.size
        explain_ms = args.explain_ms if args.explain else None
        figures = bench(kind, size, max(1, args.rounds), explain_ms)
        print(json.dumps(figures, indent=2), flush=True)


if __name__ == "__main__":
    main()
