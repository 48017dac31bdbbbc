"""Benchmark: does a pass or a poll round cost more once the store holds months of history?

    .venv/bin/python bench/history.py                       # 5,000,000 postings and deliveries
    .venv/bin/python bench/history.py --size 200000         # a quick run
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

For an empty store and for one prefilled with `--size` postings and as many deliveries (with
their transfers, notifications, matches, status changes and hourly balance snapshots: see
bench/history_data.py), it writes 1,000 new records (200 transfers, 50 of them still polled,
their 400 postings, 200 deliveries and 200 notifications) and times, each in a fresh state:

- the incremental reconciliation pass (reconciliation.reconcile.run_pass);
- one poll round's store work: the sweep's claims (due holdings, pending deliveries), the
  transfer claim, and taking and giving back each holding's activity lease. No gateway request
  is made: what is measured is what the store costs, which is what history could make grow.

The figures of the two stores should be alike; a ratio far above 1 names a query whose cost
follows the history. PostgreSQL only (the embedded SQLite default is not meant for this size).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import Engine, text  # noqa: E402 - after the path set just above

from bench.history_data import HOLDINGS, add_recent, fill_history  # noqa: E402
from migrations import runner as migrate  # noqa: E402
from reconciliation.notifications.processing import pending_deliveries  # noqa: E402
from reconciliation.policy import ReconcilePolicy  # noqa: E402
from reconciliation.postings.activity import (  # noqa: E402
    acquire_lease,
    claim_due_holdings,
    release_lease,
)
from reconciliation.reconcile import run_pass  # noqa: E402
from reconciliation.store.db import make_engine, make_session_factory, transaction  # noqa: E402
from reconciliation.store.types import utcnow  # noqa: E402
from reconciliation.transfers.polling import claim_due_transfers  # noqa: E402

#: New transfers per measured round; with their legs, deliveries and notifications: 1,000 records.
NEW_TRANSFERS = 200


def fresh_database(admin_url: str) -> tuple[str, Callable[[], None]]:
    name = f"recon_history_bench_{uuid.uuid4().hex[:8]}"
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = f"{admin_url.rpartition('/')[0]}/{name}"
    migrate.upgrade(url)

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url, drop


def poll_round(engine: Engine) -> float:
    """The store side of one round of every poller; seconds."""
    factory = make_session_factory(engine)
    now = utcnow()
    started = time.perf_counter()
    with transaction(factory) as session:
        claim_due_holdings(session, now, timedelta(seconds=60))
        pending_deliveries(session, now - timedelta(seconds=60), 5_000)
    claim_due_transfers(factory, "bench", now, limit=100)
    for holding in range(1, HOLDINGS + 1):
        lease = acquire_lease(factory, holding, "bench", now)
        if lease is not None:
            release_lease(factory, lease, now + timedelta(seconds=15), caught_up_at=now)
    return time.perf_counter() - started


def measure(url: str, rounds: int) -> dict[str, float]:
    engine = make_engine(url)
    factory = make_session_factory(engine)
    policy = ReconcilePolicy()
    run_pass(factory, policy, publish=False)  # settle whatever the fill left, once
    figures: dict[str, list[float]] = {"pass": [], "matching": [], "drift": [], "poll": []}
    for _ in range(rounds):
        add_recent(engine, transfers=NEW_TRANSFERS, now=utcnow(), polled=50)
        started = time.perf_counter()
        result = run_pass(factory, policy, publish=False)
        figures["pass"].append(time.perf_counter() - started)
        # Matching includes waiting (up to 10 s) for transactions in flight anywhere on the
        # server (matching.backlog): on a shared server that wait is other people's work.
        figures["matching"].append(result.seconds["matching"])
        figures["drift"].append(result.seconds["drift"] + result.seconds["alerts"])
        figures["poll"].append(poll_round(engine))
    engine.dispose()
    return {k: statistics.median(v) for k, v in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=5_000_000, help="postings (and deliveries)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per store")
    args = parser.parse_args()
    admin = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    admin = admin.replace("postgresql://", "postgresql+psycopg://", 1)
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    results: dict[str, dict[str, float]] = {}
    for label, size in (("empty", 0), (f"{args.size:,} postings", args.size)):
        url, drop = fresh_database(admin)
        try:
            started = time.perf_counter()
            fill_history(make_engine(url), transfers=size // 2, now=utcnow(), days=120)
            print(f"filled {label} in {time.perf_counter() - started:.0f}s", flush=True)
            results[label] = measure(url, args.rounds)
        finally:
            drop()
    print(f"\nafter {NEW_TRANSFERS * 5:,} new records, median of {args.rounds} rounds (seconds):")
    columns = ("pass", "matching", "drift", "poll")
    print(
        f"{'store':<24}"
        + "".join(f"{c:>14}" for c in ("pass", "matching", "drift+alerts", "poll round"))
    )
    for label, figures in results.items():
        print(f"{label:<24}" + "".join(f"{figures[c]:>14.3f}" for c in columns))
    empty, full = results["empty"], results[f"{args.size:,} postings"]
    print(
        f"{'ratio (history/empty)':<24}" + "".join(f"{full[c] / empty[c]:>13.2f}x" for c in columns)
    )


if __name__ == "__main__":
    main()
