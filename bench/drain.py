"""Benchmark: recovery of lost inbox messages, 100,000 pending deliveries drained by two workers.

    .venv/bin/python bench/drain.py                       # 100,000 rows, 2 workers, 3 rounds
    .venv/bin/python bench/drain.py --rows 20000 --rounds 1
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

The situation it plays: the receiver verified and stored every delivery (signed bodies, their
headers, state 'pending'), then Redis lost the messages that would have processed them (an
outage, a restart without persistence). Only the sweep knows they are there.

Each round
1. fills a fresh PostgreSQL store with `--rows` such deliveries, received ten minutes ago
   (past the grace period), signed with the `standard` scheme as the sandbox signs them;
2. starts a private redis-server on a free port and `--workers` `recon worker` processes on it
   (each with its default threads), and waits until they are up;
3. sends one `sweep` message, as the scheduler's tick does, and times until no delivery is
   pending any more;
4. prints the rows per second and the drain time as a ratio to the goal (60 s for 100,000
   rows, scaled to `--rows`): under 1.0 meets it.

The machine's load moves the figures; compare rounds of one run, and read min/median/max.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The goal: 100,000 lost deliveries processed within a minute by two workers.
GOAL_ROWS = 100_000
GOAL_SECONDS = 60.0

#: The secret the fake provider signs with; processing never checks it (the receiver did).
SECRET = "whsec_" + b"bench-drain-secret".hex()

DELIVERY_COLUMNS = (
    "delivery_id, body_sha256, body, headers, scheme, event_type, received_at, state, "
    "attempts, original"
)


def _body(k: int, at: datetime) -> tuple[str, str, bytes]:
    """One delivery's id, event type and body, in the `recon` payload shape.

    Half are completed transfers (they name a transfer, which processing records for polling),
    half inbound credits with a receipt: the two kinds a busy holding receives most.
    """
    event_id = str(uuid.UUID(int=(11 << 96) | k))
    completed = k % 2 == 0
    kind = "TRANSACTION_COMPLETED" if completed else "PAYMENT_RECEIVED"
    amount = 1_000 + (k * 7_919) % 10_000_000
    data = {
        "transferRef": str(uuid.UUID(int=(12 << 96) | k)) if completed else None,
        "receiptRef": str(uuid.UUID(int=(13 << 96) | k)),
        "accountRef": str(uuid.UUID(int=(14 << 96) | k % 500)),
        "endpointRef": str(uuid.UUID(int=(15 << 96) | k % 500)),
        "holdingRef": str(uuid.UUID(int=(16 << 96) | k % 500)),
        "amount": f"{amount // 100}.{amount % 100:02d}",
        "currency": "NGN",
        "status": "completed",
    }
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    body = {"id": event_id, "event": kind, "createdAt": stamp, "data": data}
    return event_id, kind, json.dumps(body, separators=(",", ":")).encode()


def delivery_rows(rows: int, received: datetime) -> Iterator[tuple[Any, ...]]:
    from sandbox.signing import sign

    for k in range(rows):
        event_id, kind, body = _body(k, received - timedelta(seconds=rows - k))
        headers = sign("standard", SECRET, event_id, int(received.timestamp()), body, "")
        yield (
            event_id,
            hashlib.sha256(body).hexdigest(),
            body,
            json.dumps(headers),
            "standard",
            kind,
            received,
            "pending",
            0,
            True,
        )


def fill(url: str, rows: int, received: datetime) -> None:
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY deliveries ({DELIVERY_COLUMNS}) FROM STDIN") as copy:
            for row in delivery_rows(rows, received):
                copy.write_row(row)
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE deliveries")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Processes:
    """The round's redis-server and workers; stopped by their own ids, nothing else."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []
        self.folder = Path(tempfile.mkdtemp(prefix="recon-bench-drain-"))

    def start(self, args: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
        out = (self.folder / log).open("wb")
        process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.started.append(process)
        return process

    def stop(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.started):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_for(check: Any, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench/drain.py: {what} did not happen within {seconds:.0f} s")
        time.sleep(0.1)


def pending(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM deliveries WHERE state = 'pending'").fetchone()
        return int(row[0]) if row else 0


def drain_round(admin: str, rows: int, workers: int) -> dict[str, Any]:
    import psycopg
    import redis

    from migrations import runner as migrate
    from workers.broker import REDIS_NAMESPACE

    name = f"recon_bench_drain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.rpartition("/")[0] + "/" + name
    processes = Processes()
    try:
        migrate.upgrade(url.replace("postgresql://", "postgresql+psycopg://", 1))
        fill(url, rows, datetime.now(UTC) - timedelta(minutes=10))
        port = free_port()
        redis_url = f"redis://127.0.0.1:{port}/0"
        processes.start(
            [
                *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(processes.folder)),
            ],
            dict(os.environ),
            "redis.log",
        )
        client = redis.Redis.from_url(redis_url)
        wait_for(lambda: _answers(client), "redis-server start")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DATABASE_URL": url,
            "REDIS_URL": redis_url,
            "RECON_LOG_LEVEL": "warning",
            # Required by every serving process; nothing here calls the provider.
            "RECON_GATEWAY_API_KEY": "bench-drain",
            "RECON_PROVIDER_MODE": "sandbox",
            "RECON_COMPANY_API_KEY": "bench-drain",
            "RECON_ADMIN_TOKEN": "bench-drain-" + uuid.uuid4().hex,
        }
        recon = str(Path(sys.executable).with_name("recon"))
        for n in range(workers):
            processes.start([recon, "worker"], env, f"worker-{n}.log")
        # A worker is up once its consumers beat in Redis; wait for every worker's.
        wait_for(
            lambda: client.zcard(f"{REDIS_NAMESPACE}:__heartbeats__") >= workers,
            "the workers' start",
            120,
        )
        started = time.perf_counter()
        _send_sweep(redis_url)
        wait_for(lambda: pending(url) == 0, "the drain", 600)
        seconds = time.perf_counter() - started
    finally:
        processes.stop()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    goal = GOAL_SECONDS * rows / GOAL_ROWS
    return {
        "rows": rows,
        "workers": workers,
        "seconds": round(seconds, 2),
        "rows_per_second": int(rows / seconds),
        "ratio_to_goal": round(seconds / goal, 2),
    }


def _answers(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - not up yet, whatever the client says
        return False


def _send_sweep(redis_url: str) -> None:
    """Enqueue one sweep on the round's Redis, as the scheduler's tick would."""
    from workers.actors.sweep import sweep
    from workers.broker import install_broker

    install_broker(redis_url)
    sweep.send()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=GOAL_ROWS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    admin = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    admin = admin.replace("postgresql+psycopg://", "postgresql://", 1)
    results = []
    for _ in range(args.rounds):
        result = drain_round(admin, args.rows, args.workers)
        results.append(result)
        print(json.dumps(result), flush=True)
    ratios = sorted(r["ratio_to_goal"] for r in results)
    print(
        json.dumps(
            {
                "ratio_to_goal": {
                    "min": ratios[0],
                    "median": statistics.median(ratios),
                    "max": ratios[-1],
                },
                "rows_per_second_median": int(
                    statistics.median(r["rows_per_second"] for r in results)
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
