"""Benchmark: does a pass or a poll round cost more once the store holds months of history?

    .venv/bin/python bench/history.py                       # 5,000,000 postings and deliveries
    .venv/bin/python bench/history.py --size 200000         # a quick run
    .venv/bin/python bench/history.py --fill-only           # fill now (slow), measure later:
    .venv/bin/python bench/history.py --reuse recon_history_bench_full_<id> [--keep]
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

For an empty store and for one prefilled with `--size` postings and as many deliveries (with
their transfers, notifications, matches, status changes and hourly balance snapshots: see
bench/history_data.py), it writes 1,000 new records (200 transfers, 50 of them still polled,
their 400 postings, 200 deliveries and 200 notifications) and times, round after round with
the two stores taking turns (so whatever else loads the machine falls on both alike):

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
from datetime import timedelta
from pathlib import Path
from typing import Final

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


def database_url(admin_url: str, name: str) -> str:
    return f"{admin_url.rpartition('/')[0]}/{name}"


def fresh_database(admin_url: str, kind: str) -> str:
    """A new, migrated database; its name says which bench left it behind."""
    name = f"recon_history_bench_{kind}_{uuid.uuid4().hex[:8]}"
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    migrate.upgrade(database_url(admin_url, name))
    return name


def drop_database(admin_url: str, name: str) -> None:
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


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


class Store:
    """One store under measurement, and its figures round after round."""

    def __init__(self, label: str, url: str) -> None:
        self.label = label
        self.engine = make_engine(url)
        self.factory = make_session_factory(self.engine)
        self.figures: dict[str, list[float]] = {c: [] for c in COLUMNS}
        run_pass(self.factory, ReconcilePolicy(), publish=False)  # settle what the fill left

    def round(self) -> None:
        """1,000 new records, then the incremental pass and a poll round over them."""
        add_recent(self.engine, transfers=NEW_TRANSFERS, now=utcnow(), polled=50)
        started = time.perf_counter()
        result = run_pass(self.factory, ReconcilePolicy(), publish=False)
        self.figures["pass"].append(time.perf_counter() - started)
        # Matching includes waiting (up to 10 s) for transactions in flight anywhere on the
        # server (matching.backlog): on a shared server that wait is other people's work.
        self.figures["matching"].append(result.seconds["matching"])
        self.figures["drift"].append(result.seconds["drift"] + result.seconds["alerts"])
        self.figures["poll"].append(poll_round(self.engine))


#: Figures per round: the whole pass, its matching, its drift rules and alerts, a poll round.
COLUMNS: Final = ("pass", "matching", "drift", "poll")


def spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def report(empty: Store, full: Store, rounds: int) -> None:
    print(f"\nafter {NEW_TRANSFERS * 5:,} new records, seconds min / median / max of {rounds}")
    print("rounds, the two stores taking turns (so load on the machine falls on both):")
    titles = {"pass": "pass", "matching": "matching", "drift": "drift+alerts", "poll": "poll round"}
    print(f"{'':<14}{empty.label:>26}{full.label:>30}{'ratio of medians':>20}")
    for column in COLUMNS:
        ratio = statistics.median(full.figures[column]) / statistics.median(empty.figures[column])
        print(
            f"{titles[column]:<14}{spread(empty.figures[column]):>26}"
            f"{spread(full.figures[column]):>30}{ratio:>19.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=5_000_000, help="postings (and deliveries)")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per store")
    parser.add_argument("--keep", action="store_true", help="leave the filled database behind")
    parser.add_argument("--reuse", metavar="NAME", help="measure a filled database kept before")
    parser.add_argument("--fill-only", action="store_true", help="fill (and keep), measure later")
    args = parser.parse_args()
    admin = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    admin = admin.replace("postgresql://", "postgresql+psycopg://", 1)
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    full_name = args.reuse
    if full_name is None:
        full_name = fresh_database(admin, "full")
        started = time.perf_counter()
        fill_history(
            make_engine(database_url(admin, full_name)),
            transfers=args.size // 2,
            now=utcnow(),
            days=120,
        )
        print(f"filled {args.size:,} postings in {time.perf_counter() - started:.0f}s", flush=True)
        if args.fill_only:
            print(f"kept: measure it with --reuse {full_name}")
            return
    empty_name = fresh_database(admin, "empty")
    try:
        fill_history(make_engine(database_url(admin, empty_name)), transfers=0, now=utcnow())
        with make_engine(database_url(admin, full_name)).connect() as conn:
            held = conn.execute(text("SELECT count(*) FROM postings")).scalar_one()
        empty = Store("empty store", database_url(admin, empty_name))
        full = Store(f"{held:,} postings", database_url(admin, full_name))
        for _ in range(args.rounds):
            empty.round()
            full.round()
        report(empty, full, args.rounds)
    finally:
        drop_database(admin, empty_name)
        if not (args.keep or args.reuse):
            drop_database(admin, full_name)
        else:
            print(f"kept: {full_name}")


if __name__ == "__main__":
    main()
