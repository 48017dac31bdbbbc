"""Benchmark: recovery of lost inbox messages, 100,000 pending deliveries drained by two workers.

    .venv/bin/python bench/drain.py                       # 100,000 rows, 2 workers, 3 rounds
    .venv/bin/python bench/drain.py --rows 20000 --rounds 1

The receiver verified and stored every delivery (signed, state 'pending'), then Redis lost the
messages that would have processed them; only the sweep knows they are there. Each round fills
a fresh PostgreSQL store (BENCH_POSTGRES_URL's server) with `--rows` such deliveries received
ten minutes ago (past the grace), starts `--workers` `recon worker` processes on a private
redis-server, sends one `sweep` as the scheduler's tick does, and times until none is pending:
rows per second, and the drain time as a ratio to the goal (60 s for 100,000 rows, scaled to
`--rows`; under 1.0 meets it), then min / median / max over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import psycopg
from harness import plain, recon_env, services, spread, wait_until
from streams import Row, owner, recon_delivery, ref, write

from recon.demo.processes import ProcessGroup, recon_argv

#: The goal: 100,000 lost deliveries processed within a minute by two workers.
GOAL_ROWS: Final = 100_000
GOAL_SECONDS: Final = 60.0

#: The secret the fake provider signs with; processing never checks it (the receiver did).
SECRET: Final = "whsec_" + b"bench-drain-secret".hex()


def deliveries(rows: int, received: datetime) -> Iterator[Row]:
    """Pending deliveries in the `recon` payload shape, signed as the sandbox signs them.

    Half are completed transfers (they name a transfer, which processing records for polling),
    half inbound credits with a receipt: the two kinds a busy holding receives most.
    """
    from sandbox.signing import sign

    for k in range(rows):
        completed, amount = k % 2 == 0, 1_000 + (k * 7_919) % 10_000_000
        kind = "TRANSACTION_COMPLETED" if completed else "PAYMENT_RECEIVED"
        data = {
            "transferRef": str(ref("transfer", k)) if completed else None,
            "receiptRef": str(ref("receipt", k)),
            # 500 owners in turn
            **{f"{key[:-4]}Ref": str(value) for key, value in owner(k % 500).items()},
            "amount": f"{amount // 100}.{amount % 100:02d}",
            "currency": "NGN",
            "status": "completed",
        }
        at = received - timedelta(seconds=rows - k)
        event = str(ref("event", k))
        row = recon_delivery(event, kind, at, data, received_at=received, state="pending")
        signed = sign(
            "standard", SECRET, row["delivery_id"], int(received.timestamp()), row["body"], ""
        )
        yield row | {"headers": json.dumps(signed), "attempts": 0}


def pending(url: str) -> int:
    with psycopg.connect(plain(url)) as conn:
        return conn.execute("SELECT count(*) FROM deliveries WHERE state = 'pending'").fetchone()[0]


def drain_round(rows: int, workers: int) -> dict[str, Any]:
    """A store of `rows` lost deliveries, `workers` workers on a Redis of their own, one sweep."""
    import redis

    from workers import install_broker
    from workers.actors.sweep import sweep
    from workers.broker import REDIS_NAMESPACE

    with services("drain") as (folder, url, redis_url):
        write(url, [("deliveries", deliveries(rows, datetime.now(UTC) - timedelta(minutes=10)))])
        env = recon_env(url, folder / "state", REDIS_URL=redis_url, RECON_PROVIDER_MODE="sandbox")
        group = ProcessGroup(folder / "logs")
        try:
            for n in range(workers):
                group.start(f"worker-{n}", recon_argv("worker"), env)
            # A worker is up once its consumers beat in Redis; wait for every worker's.
            client = redis.Redis.from_url(redis_url)
            beats = f"{REDIS_NAMESPACE}:__heartbeats__"
            wait_until(lambda: client.zcard(beats) >= workers, 120, "the workers' start")
            began = time.perf_counter()
            install_broker(redis_url)
            sweep.send()  # as the scheduler's tick does
            wait_until(lambda: pending(url) == 0, 600, "the drain")
            seconds = time.perf_counter() - began
        finally:
            group.stop()
    goal = GOAL_SECONDS * rows / GOAL_ROWS
    return {
        "rows": rows,
        "workers": workers,
        "seconds": round(seconds, 2),
        "rows_per_second": int(rows / seconds),
        "ratio_to_goal": round(seconds / goal, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=GOAL_ROWS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = []
    for _ in range(args.rounds):
        results.append(drain_round(args.rows, args.workers))
        print(json.dumps(results[-1]), flush=True)
    ratios = spread([r["ratio_to_goal"] for r in results])
    rate = statistics.median(r["rows_per_second"] for r in results)
    print(f"ratio to goal (min / median / max): {ratios}; rows per second, median: {rate:,.0f}")


if __name__ == "__main__":
    main()
