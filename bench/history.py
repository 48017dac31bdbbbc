"""Benchmark: does a pass or a poll round cost more once the store holds months of history?

    .venv/bin/python bench/history.py --size 200000         # a quick run (default 5,000,000)

An empty store and one prefilled with `--size` postings and as many deliveries (and their
transfers, notifications, matches, status changes, hourly snapshots: the retention tests'
tests/integration/retention/history_data.py) take turns, round after round, so the machine's
load falls on both alike: 1,000 new records (200 transfers, 50 still polled, their postings,
deliveries and notifications), then the incremental pass and one poll round's store work (the
sweep's claims, the transfer claim, each holding's activity lease taken and given back; no
gateway request). The two should cost alike; a ratio far above 1 names a query whose cost
follows the history. PostgreSQL only.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta
from typing import Final

from harness import postgres_database, quiet_logs, spread
from sqlalchemy import Engine

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.notifications.processing import pending_deliveries
from reconciliation.postings.activity import acquire_lease, release_lease
from reconciliation.postings.due_reads import claim_due_holdings
from reconciliation.store.db import make_engine, make_session_factory, transaction
from reconciliation.store.types import utcnow
from reconciliation.transfers.polling import claim_due_transfers
from tests.integration.retention.history_data import HOLDINGS, add_recent, fill_history

#: New transfers per measured round; with their legs, deliveries and notifications: 1,000 records.
NEW_TRANSFERS: Final = 200


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
        self.figures: dict[str, list[float]] = {c: [] for c in COLUMNS.values()}
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


#: Figures per round, by title: the whole pass, its matching, its drift rules and alerts, and
#: a poll round.
COLUMNS: Final = {"pass": "pass", "matching": "matching", "drift+alerts": "drift", "poll round": "poll"}  # fmt: skip


def report(empty: Store, full: Store, rounds: int) -> None:
    print(f"\nafter {NEW_TRANSFERS * 5:,} new records, seconds min / median / max of {rounds}")
    print("rounds, the two stores taking turns (so load on the machine falls on both):")
    print(f"{'':<14}{empty.label:>26}{full.label:>30}{'ratio of medians':>20}")
    for title, column in COLUMNS.items():
        ratio = statistics.median(full.figures[column]) / statistics.median(empty.figures[column])
        print(
            f"{title:<14}{spread(empty.figures[column], '{:.3f}'):>26}"
            f"{spread(full.figures[column], '{:.3f}'):>30}{ratio:>19.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=5_000_000, help="postings (and deliveries)")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per store")
    args = parser.parse_args()
    quiet_logs()
    with postgres_database("history") as full_url, postgres_database("history") as empty_url:
        started = time.perf_counter()
        fill_history(make_engine(full_url), transfers=args.size // 2, now=utcnow(), days=120)
        print(f"filled {args.size:,} postings in {time.perf_counter() - started:.0f}s", flush=True)
        fill_history(make_engine(empty_url), transfers=0, now=utcnow())
        empty, full = Store("empty store", empty_url), Store(f"{args.size:,} postings", full_url)
        for _ in range(args.rounds):
            empty.round()
            full.round()
        report(empty, full, args.rounds)


if __name__ == "__main__":
    main()
