"""Soak: recon's processes under steady traffic for a while, and what grows per hour.

    .venv/bin/python bench/soak.py --minutes 120 --rate 8        # the issue's soak (default)
    .venv/bin/python bench/soak.py --minutes 4 --retain-minutes 1 --rate 2   # a smoke run
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

It starts what `recon demo` starts on PostgreSQL and Redis (recon.demo.run): the sandbox, the
release step, then separate `recon web`, `recon worker` and `recon scheduler` processes on a
fresh database and a private redis-server. It opens `--holdings` collection endpoints and then,
`--rate` times a second, alternately simulates an inbound credit (one posting, one webhook) and
asks for a transfer between two of them (two postings once settled, one webhook).

Every `--sample-seconds` it samples each process (RSS, open files, threads, summed over the
process and its children), the database's connections, Redis's used memory, each table's size
and the log files' bytes. At the end it stops driving, waits for recon to settle, checks that
nothing was lost or doubled (every credit and settled transfer has its postings and exactly one
notification, no delivery id is stored twice as an original, no posting is stored twice) and
prints each figure's growth per hour (a least-squares slope over the samples).

Retention runs as in production, only faster: `--retain-minutes M` sets every retention age,
the reconciled facts' limits included (RECON_RETAIN_*_DAYS as a fraction of a day), to M
minutes, the matching window to half of that (so the window does not keep everything), and
the prune to run every few minutes, archiving what it removes. Nothing lost or doubled is then
checked over the store and the archive together. The end compares each table's bytes after
the first retention cycle (`first_cycle_seconds`: about M + 3 minutes in) with those at the end,
and says whether each goal of the issue is met: table bytes flat within 10%, the worker's RSS
growing less than 5 MB/h after its first 10 minutes, at most 1 MB/h of info log per process.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402 - after the path set just above
from sqlalchemy import text  # noqa: E402

from bench.soak_checks import (  # noqa: E402
    ArchiveReader,
    Driven,
    Samples,
    check_nothing_lost,
    report_goals,
)
from recon.demo.processes import ProcessGroup  # noqa: E402
from recon.demo.run import plan_demo, start_processes  # noqa: E402
from recon.demo.scenario import COLLECTION_TEMPLATE, NGN  # noqa: E402
from reconciliation.store.db import make_engine, make_session_factory  # noqa: E402
from reconciliation.transfers.intents import RESERVED  # noqa: E402
from reconciliation.transfers.outbound import StoreIdempotencyKeys  # noqa: E402
from reconciliation.transfers.requests import request_transfer  # noqa: E402
from upstream.gateway import GatewayClient  # noqa: E402
from upstream.wire.balances import CreditRequest  # noqa: E402
from upstream.wire.common import Destination, HoldingAddress  # noqa: E402
from upstream.wire.endpoints import EndpointRequest  # noqa: E402
from upstream.wire.transfers import TransferRequest  # noqa: E402

#: Intervals of the soak's recon: production-like, not the demo's hurried ones.
SOAK_TIMINGS = {
    "RECON_POLL_ACTIVITY_SECONDS": "5",
    "RECON_POLL_TRANSFERS_SECONDS": "2",
    "RECON_SNAPSHOT_BALANCES_SECONDS": "30",
    "RECON_DISCOVER_HOLDINGS_SECONDS": "60",
    "RECON_CHECK_SUBSCRIPTION_SECONDS": "60",
    "RECON_SWEEP_SECONDS": "30",
    "RECON_RECONCILE_SECONDS": "30",
    "RECON_DELIVERY_GRACE_SECONDS": "30",
    "RECON_NOTIFICATION_GRACE_SECONDS": "120",
    "RECON_PROJECTION_GRACE_SECONDS": "120",
    "RECON_LOG_LEVEL": "info",
}

#: How long the end waits for recon to have stored and matched everything driven.
SETTLE_SECONDS = 180.0


def retention_env(retain_minutes: float, archive: Path) -> dict[str, str]:
    """Every retention age `retain_minutes`, a window that lets them act, a prune every few
    minutes that archives what it removes."""
    days = f"{retain_minutes / 1440:.6f}"
    ages = (
        "DELIVERIES",
        "OUTBOUND_REQUESTS",
        "SNAPSHOTS",
        "TRANSFER_HISTORY",
        "RESOLVED_ALERTS",
        "POSTINGS",
        "TRANSFERS",
        "NOTIFICATIONS",
        "MATCHES",
    )
    return {
        **{f"RECON_RETAIN_{kind}_DAYS": days for kind in ages},
        # Every age is at least the window: half the age keeps the window out of the way, and
        # a minute or an hour bounds it either side (as long as a webhook may lag its posting).
        "RECON_MATCH_WINDOW_SECONDS": str(int(max(60, min(3600, retain_minutes * 30)))),
        "RECON_RETENTION_SECONDS": str(prune_seconds(retain_minutes)),
        "RECON_RETENTION_ARCHIVE_DIR": str(archive),
    }


def first_cycle_seconds(retain_minutes: float) -> float:
    """When the tables hold what they will hold for good: a posting goes once it is past its
    age and behind a balance check by the projection grace (a snapshot every interval), and
    the prune after that, and the one after, have run."""
    snapshot = float(SOAK_TIMINGS["RECON_SNAPSHOT_BALANCES_SECONDS"])
    grace = float(SOAK_TIMINGS["RECON_PROJECTION_GRACE_SECONDS"])
    return retain_minutes * 60 + grace + snapshot + 2 * prune_seconds(retain_minutes)


def prune_seconds(retain_minutes: float) -> int:
    """A prune every fifth of the age, between 30 s and 3 minutes: what a table holds then
    swings by a fifth of the age's traffic at most, below the 10% the goal allows."""
    return int(max(30, min(180, retain_minutes * 60 / 5)))


def process_tree(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            children = (
                (task / "children").read_text().split() if (task / "children").exists() else []
            )
            stack.extend(int(c) for c in children)
    return found


def process_figures(pid: int) -> dict[str, float]:
    rss = files = threads = 0.0
    for member in process_tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
            files += sum(1 for _ in Path(f"/proc/{member}/fd").iterdir())
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss += int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                threads += int(line.split()[1])
    return {"rss_mb": rss, "open_files": files, "threads": threads}


def sample(group: ProcessGroup, engine: Any, redis_url: str, log_dir: Path) -> dict[str, float]:
    import redis

    figures: dict[str, float] = {}
    for managed in group.processes:
        if managed.name in ("web", "worker", "scheduler"):
            for key, value in process_figures(managed.popen.pid).items():
                figures[f"{managed.name}.{key}"] = value
    with engine.connect() as conn:
        figures["db.connections"] = float(
            conn.scalar(
                text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            )
        )
        for table, size in conn.execute(
            text(
                "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables "
                "ORDER BY relname"
            )
        ):
            figures[f"table.{table}_mb"] = size / 2**20
    figures["redis.used_memory_mb"] = (
        redis.Redis.from_url(redis_url).info("memory")["used_memory"] / 2**20
    )
    logs = [p for p in log_dir.glob("*.log") if p.is_file()]
    for path in logs:
        figures[f"log.{path.stem}_mb"] = path.stat().st_size / 2**20
    figures["logs_mb"] = sum(p.stat().st_size for p in logs) / 2**20
    return figures


def open_endpoints(gateway: GatewayClient, count: int) -> list[HoldingAddress]:
    owner, found = uuid.uuid4(), []
    for _ in range(count):
        created = gateway.create_programmable_endpoint(
            EndpointRequest(
                template=COLLECTION_TEMPLATE,
                owner_ref=owner,
                owner_kind="business-entity",
                value_unit=NGN,
            )
        )
        ep = created.value.endpoint  # type: ignore[union-attr]
        assert ep.holding_ref is not None, "a collection endpoint opens with its holding"
        found.append(
            HoldingAddress(
                account_ref=ep.account_ref, endpoint_ref=ep.endpoint_ref, holding_ref=ep.holding_ref
            )
        )
    return found


def drive_one(
    n: int, gateway: GatewayClient, factory: Any, endpoints: list[HoldingAddress], driven: Driven
) -> None:
    # Each endpoint is credited before it pays out, and pays the next one a little.
    source, dest = endpoints[(n // 2) % len(endpoints)], endpoints[(n // 2 + 1) % len(endpoints)]
    if n % 2 == 0:
        target = source
        gateway.simulate_inbound_credit(
            CreditRequest(target=target, value_unit=NGN, amount_minor_units=10_000 + n)
        )
        driven.credits += 1
        return
    creation = request_transfer(
        gateway,
        factory,
        TransferRequest(
            source=source,
            destination=Destination.internal(dest),
            value_unit=NGN,
            amount_minor_units=100 + n % 50,
        ),
    )
    if creation.outcome == RESERVED:
        driven.transfers += 1
    else:
        driven.denied += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument(
        "--retain-minutes",
        type=float,
        default=10.0,
        help="every retention age, reconciled facts included (minutes)",
    )
    parser.add_argument("--rate", type=float, default=8.0, help="credits and transfers per second")
    parser.add_argument("--holdings", type=int, default=20)
    parser.add_argument("--sample-seconds", type=float, default=30.0)
    args = parser.parse_args()
    admin = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    import logging

    import structlog

    # The driver's own client logs would bury the figures; recon's processes log to their files.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    sys.path.insert(0, str(ROOT / "bench"))
    from catchup_services import postgres_database, private_redis

    with tempfile.TemporaryDirectory(prefix="recon-soak-") as tmp:
        workdir = Path(tmp)
        with postgres_database(admin) as db_url, private_redis(workdir) as redis_url:
            soak_env = SOAK_TIMINGS | retention_env(args.retain_minutes, workdir / "archive")
            env = {**os.environ, **soak_env, "DATABASE_URL": db_url, "REDIS_URL": redis_url}
            plan = plan_demo(env, workdir / "state", workdir / "report.html")
            plan.env.update(soak_env)  # over the demo's own hurried timings
            group = ProcessGroup(plan.log_dir)
            engine = make_engine(db_url)
            try:
                run(args, plan, group, engine, redis_url)
            finally:
                group.stop()
                engine.dispose()


def run(
    args: argparse.Namespace, plan: Any, group: ProcessGroup, engine: Any, redis_url: str
) -> None:
    start_processes(plan, group, lambda step: print(f"-- {step}", flush=True))
    factory = make_session_factory(engine)
    samples, driven = Samples(), Driven()
    with GatewayClient(
        plan.sandbox_url,
        plan.env["RECON_GATEWAY_API_KEY"],
        idempotency=StoreIdempotencyKeys(factory),
    ) as gateway:
        endpoints = open_endpoints(gateway, args.holdings)
        started = time.monotonic()
        ends = started + args.minutes * 60
        next_sample, n = started, 0
        while time.monotonic() < ends:
            now = time.monotonic()
            if now >= next_sample:
                group.check_alive()
                samples.add(now - started, sample(group, engine, redis_url, plan.log_dir))
                next_sample += args.sample_seconds
            due = started + n / args.rate
            if now < due:
                time.sleep(min(due - now, 0.05))
                continue
            try:
                drive_one(n, gateway, factory, endpoints, driven)
            except httpx.HTTPError as exc:
                print(f"   drive {n}: {type(exc).__name__}", flush=True)
            n += 1
        samples.add(time.monotonic() - started, sample(group, engine, redis_url, plan.log_dir))
    print(
        f"-- drove {driven.credits} credits and {driven.transfers} transfers; settling", flush=True
    )
    deadline = time.monotonic() + SETTLE_SECONDS
    archive = ArchiveReader(Path(plan.env["RECON_RETENTION_ARCHIVE_DIR"]))
    verdict = check_nothing_lost(factory, driven, archive)
    while not verdict["ok"] and time.monotonic() < deadline:
        time.sleep(5)
        verdict = check_nothing_lost(factory, driven, archive)
    minutes = samples.times[-1] / 60
    print(f"\nsoak: {minutes:.1f} min at {args.rate}/s, {len(samples.times)} samples")
    print(f"{'figure':<44}{'first':>12}{'last':>12}{'per hour':>14}")
    for name in sorted(samples.series):
        first, last = samples.series[name][0][1], samples.series[name][-1][1]
        print(f"{name:<44}{first:>12.2f}{last:>12.2f}{samples.per_hour(name):>+14.2f}")
    report_goals(samples, first_cycle_seconds(args.retain_minutes))
    print(f"\nremoved by retention (archived): {archive.counts()}")
    print(f"\nnothing lost or doubled: {verdict}")
    if not verdict["ok"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
