"""Soak: recon's processes under steady traffic for a while, and what grows per hour.

    .venv/bin/python bench/soak.py --minutes 4 --retain-minutes 1 --rate 2   # a smoke run

What `recon demo` starts (sandbox, release, web, worker, scheduler) on a fresh PostgreSQL
database and a private Redis, `--rate` operations a second (an inbound credit, then a transfer
between two of `--holdings` endpoints). Every `--sample-seconds`: each process's RSS, open files
and threads, the database's connections, Redis's memory, each table's size, the logs' bytes. At
the end: nothing lost or doubled over the store and the retention archive together, and each
figure's growth per hour (a least-squares slope). recon runs with `MALLOC_ARENA_MAX=2`, as
docs/deploy.md deploys it (`--malloc-arena-max`). `--retain-minutes M` makes every retention
age M minutes; the end compares table bytes after the first retention cycle with the end and
says whether each goal is met: table bytes flat within 10%, worker RSS under +5 MB/h after 10
minutes and over the second half (as a ratio to 5 MB/h: under 1.00 meets it), at most 1 MB/h
of log.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Final

import httpx
from harness import process_figures, quiet_logs, services
from sqlalchemy import Engine, select, text

from recon.demo.processes import ProcessGroup
from recon.demo.run import DemoPlan, plan_demo, start_processes
from recon.demo.scenario import COLLECTION_TEMPLATE, NGN
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Delivery, Notification, Posting, Transfer
from reconciliation.transfers.intents import RESERVED
from reconciliation.transfers.outbound import StoreIdempotencyKeys
from reconciliation.transfers.requests import request_transfer
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import Destination, HoldingAddress
from upstream.wire.endpoints import EndpointRequest
from upstream.wire.transfers import TransferRequest

#: Intervals of the soak's recon: production-like, not the demo's hurried ones.
SOAK_TIMINGS: Final = {
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
#: Every retention age the soak shortens, reconciled facts included.
AGES: Final = "DELIVERIES OUTBOUND_REQUESTS SNAPSHOTS TRANSFER_HISTORY RESOLVED_ALERTS POSTINGS TRANSFERS NOTIFICATIONS MATCHES"  # fmt: skip
#: How long the end waits for recon to have stored and matched everything driven.
SETTLE_SECONDS: Final = 180.0
#: The issue's goals: table bytes at the end within this share of the bytes after the first
#: retention cycle; worker RSS growth per hour after its warm-up; info log per process per hour.
TABLE_GROWTH_GOAL: Final = 0.10
RSS_GOAL_MB_PER_HOUR: Final = 5.0
RSS_WARMUP_SECONDS: Final = 600.0
LOG_GOAL_MB_PER_HOUR: Final = 1.0
#: The allocator setting docs/deploy.md gives production ("Worker memory"), so the soak
#: measures the worker as deployed; `--malloc-arena-max 0` measures glibc's default beside it.
DEPLOYED_ARENA_MAX: Final = 2
#: Windows the worker's RSS curve is shown in (its slope within each).
RSS_WINDOW_SECONDS: Final = 600.0
#: The processes sampled, and the ones the log goal is about (the sandbox is not recon's).
RECON_PROCESSES: Final = ("web", "worker", "scheduler")


def prune_seconds(retain_minutes: float) -> int:
    """A prune every fifth of the age, between 30 s and 3 minutes: what a table holds then
    swings by a fifth of the age's traffic at most, below the 10% the goal allows."""
    return int(max(30, min(180, retain_minutes * 60 / 5)))


def retention_env(retain_minutes: float, archive: Path) -> dict[str, str]:
    """Every retention age `retain_minutes`, a window that lets them act, a prune every few
    minutes that archives what it removes."""
    days = f"{retain_minutes / 1440:.6f}"
    return {
        **{f"RECON_RETAIN_{kind}_DAYS": days for kind in AGES.split()},
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


#: Every figure sampled over the run: name -> [(seconds in, value)].
Samples = dict[str, list[tuple[float, float]]]


def per_hour(points: list[tuple[float, float]], since: float = 0.0) -> float:
    """Least-squares slope of the points from `since` seconds in, per hour."""
    points = [(x, y) for x, y in points if x >= since]
    if len(points) < 2:
        return 0.0
    mx, my = (sum(p[i] for p in points) / len(points) for i in (0, 1))
    den = sum((x - mx) ** 2 for x, _ in points) or 1.0
    return sum((x - mx) * (y - my) for x, y in points) / den * 3600


def rss_windows(samples: Samples) -> str:
    """The worker's RSS at the end of each window and its slope within it, in order."""
    points = samples["worker.rss_mb"]
    shown = []
    start = 0.0
    while start < points[-1][0]:
        inside = [(t, v) for t, v in points if start <= t < start + RSS_WINDOW_SECONDS]
        if len(inside) >= 2:
            shown.append(f"{inside[-1][1]:.0f} MB ({per_hour(inside):+.1f}/h)")
        start += RSS_WINDOW_SECONDS
    return ", ".join(shown)


def sample(group: ProcessGroup, engine: Engine, redis_url: str, log_dir: Path) -> dict[str, float]:
    import redis

    figures: dict[str, float] = {}
    for managed in group.processes:
        if managed.name in RECON_PROCESSES:
            for key, value in process_figures(managed.popen.pid).items():
                figures[f"{managed.name}.{key}"] = value
    with engine.connect() as conn:
        here = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        figures["db.connections"] = float(conn.scalar(text(here)) or 0)
        sizes = "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables"
        for table, size in conn.execute(text(sizes)):
            figures[f"table.{table}_mb"] = size / 2**20
    figures["redis.used_memory_mb"] = (
        redis.Redis.from_url(redis_url).info("memory")["used_memory"] / 2**20
    )
    logs = [p for p in log_dir.glob("*.log") if p.is_file()]
    for path in logs:
        figures[f"log.{path.stem}_mb"] = path.stat().st_size / 2**20
    figures["logs_mb"] = sum(p.stat().st_size for p in logs) / 2**20
    return figures


def archived(folder: Path, table: str, read: dict[Path, Any]) -> list[dict[str, Any]]:
    """The rows retention archived from `table`; a file is read again only once it has grown."""
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob(f"{table}-*.jsonl.gz")):
        size = path.stat().st_size
        if read.get(path, (None,))[0] != size:
            try:
                with gzip.open(path, "rt", encoding="utf-8") as stream:
                    read[path] = (size, [json.loads(line) for line in stream if line.strip()])
            except (OSError, EOFError, ValueError):
                continue  # a batch being appended: read next time
        found += read[path][1]
    return found


def check_nothing_lost(
    factory: Any, driven: Counter[str], archive: Path, read: dict[Path, Any]
) -> dict[str, Any]:
    """Over the store and the archive together: the store is read first, so a row pruned
    meanwhile is in the archive, and one in both is counted once (every set is by row id)."""
    with factory() as s:
        lines = select(Posting.id, Posting.journal_ref, Posting.line_ref)
        postings = {r.id: (str(r.journal_ref), str(r.line_ref)) for r in s.execute(lines)}
        notifications = dict(s.execute(select(Notification.id, Notification.event_id)).all())
        originals = select(Delivery.id, Delivery.delivery_id).where(Delivery.original.is_(True))
        delivered = dict(s.execute(originals).all())
        settled = set(s.scalars(select(Transfer.id).where(Transfer.is_successful.is_(True))))

    def rows(table: str) -> list[dict[str, Any]]:
        return archived(archive, table, read)

    postings |= {r["id"]: (r["journal_ref"], r["line_ref"]) for r in rows("postings")}
    notifications |= {r["id"]: r["event_id"] for r in rows("notifications")}
    delivered |= {r["id"]: r["delivery_id"] for r in rows("deliveries") if r["original"] is True}
    settled |= {r["id"] for r in rows("transfers") if r["is_successful"] is True}
    expected_postings = driven["credits"] + 2 * len(settled)
    found = {"credits": driven["credits"], "transfers": driven["transfers"]}
    found |= {"settled": len(settled), "postings": len(postings)}
    found |= {"expected_postings": expected_postings, "notifications": len(notifications)}
    return found | {
        "ok": len(postings) == len(set(postings.values())) == expected_postings
        and len(notifications) == len(set(notifications.values()))
        and len(delivered) == len(set(delivered.values()))
        and len(notifications) >= driven["credits"] + len(settled),
    }


def report_goals(samples: Samples, times: list[float], first_cycle: float) -> None:
    """Table bytes after the first retention cycle (`first_cycle` seconds in) against the end,
    and whether each goal of the issue is met."""
    at, end = next((t for t in times if t >= first_cycle), times[-1]), times[-1]
    print(f"\ntable bytes after the first retention cycle ({at / 60:.1f} min) vs at the end")
    print(f"{'table':<44}{'after cycle':>12}{'end':>12}{'ratio':>10}")
    total_then = total_end = 0.0
    for name in sorted(n for n in samples if n.startswith("table.")):
        values = dict(samples[name])
        then, last = values.get(at, 0.0), values[end]
        total_then, total_end = total_then + then, total_end + last
        ratio = f"{last / then:.3f}" if then else "-"
        print(f"{name.removeprefix('table.'):<44}{then:>12.2f}{last:>12.2f}{ratio:>10}")
    total_ratio = total_end / total_then if total_then else float("inf")
    print(f"{'total (MB)':<44}{total_then:>12.2f}{total_end:>12.2f}{total_ratio:>10.3f}")
    if at >= end:
        print("\ngoals: the run ended before its first retention cycle; run longer to judge")
        return
    verdict = {True: "met", False: "NOT met"}
    flat = total_ratio <= 1 + TABLE_GROWTH_GOAL
    print(f"\ngoal: table bytes flat within {TABLE_GROWTH_GOAL:.0%}: {verdict[flat]}")
    rss = samples["worker.rss_mb"]
    if sum(1 for t, _ in rss if t >= RSS_WARMUP_SECONDS) < 2:
        print(f"goal: worker RSS: fewer than two samples after {RSS_WARMUP_SECONDS / 60:g} min")
    else:
        # Past a warm-up (two hours' soak: about 40 minutes) only a leak still grows over the
        # run's second half; the windows show the curve's shape: a worker still filling its
        # caches grows early and then levels off, a leak keeps its slope.
        half = rss[-1][0] / 2
        for since, when in (
            (RSS_WARMUP_SECONDS, f"after {RSS_WARMUP_SECONDS / 60:g} min"),
            (half, f"over the second half (from {half / 60:.0f} min)"),
        ):
            slope = per_hour(rss, since=since)
            print(
                f"goal: worker RSS < {RSS_GOAL_MB_PER_HOUR:g} MB/h {when}: {slope:+.2f} MB/h, "
                f"ratio to goal {slope / RSS_GOAL_MB_PER_HOUR:.2f} (under 1.00 meets it), "
                f"{verdict[slope < RSS_GOAL_MB_PER_HOUR]}"
            )
        print(f"worker RSS by {RSS_WINDOW_SECONDS / 60:g}-minute window: {rss_windows(samples)}")
    for process in RECON_PROCESSES:
        if f"log.{process}_mb" in samples:
            rate = per_hour(samples[f"log.{process}_mb"])
            print(
                f"goal: <= {LOG_GOAL_MB_PER_HOUR:g} MB/h of log, {process}: {rate:+.3f} MB/h, "
                f"{verdict[rate <= LOG_GOAL_MB_PER_HOUR]}"
            )


def open_endpoints(gateway: GatewayClient, count: int) -> list[HoldingAddress]:
    owner, found = uuid.uuid4(), []
    request = EndpointRequest(
        template=COLLECTION_TEMPLATE, owner_ref=owner, owner_kind="business-entity", value_unit=NGN
    )
    for _ in range(count):
        ep = gateway.create_programmable_endpoint(request).value.endpoint  # type: ignore[union-attr]
        assert ep.holding_ref is not None, "a collection endpoint opens with its holding"
        refs = {"account_ref": ep.account_ref, "endpoint_ref": ep.endpoint_ref}
        found.append(HoldingAddress(**refs, holding_ref=ep.holding_ref))
    return found


def drive_one(n: int, gateway: GatewayClient, factory: Any, endpoints: list[Any]) -> str:
    """A credit (even `n`) or a transfer (odd): each endpoint is credited before it pays out,
    and pays the next one a little. Returns what it drove."""
    source, dest = endpoints[(n // 2) % len(endpoints)], endpoints[(n // 2 + 1) % len(endpoints)]
    if n % 2 == 0:
        credit = CreditRequest(target=source, value_unit=NGN, amount_minor_units=10_000 + n)
        gateway.simulate_inbound_credit(credit)
        return "credits"
    to, amount = Destination.internal(dest), 100 + n % 50
    transfer = TransferRequest(
        source=source, destination=to, value_unit=NGN, amount_minor_units=amount
    )
    reserved = request_transfer(gateway, factory, transfer).outcome == RESERVED
    return "transfers" if reserved else "denied"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--retain-minutes", type=float, default=10.0, help="retention ages")
    parser.add_argument("--rate", type=float, default=8.0, help="credits and transfers per second")
    parser.add_argument("--holdings", type=int, default=20)
    parser.add_argument("--sample-seconds", type=float, default=30.0)
    arenas = "glibc's MALLOC_ARENA_MAX for recon's processes (0: glibc's default)"
    parser.add_argument("--malloc-arena-max", type=int, default=DEPLOYED_ARENA_MAX, help=arenas)
    args = parser.parse_args()
    # The driver's own client logs would bury the figures; recon's processes log to their files.
    quiet_logs()
    with services("soak") as (workdir, db_url, redis_url):
        soak_env = SOAK_TIMINGS | retention_env(args.retain_minutes, workdir / "archive")
        if args.malloc_arena_max > 0:
            soak_env["MALLOC_ARENA_MAX"] = str(args.malloc_arena_max)
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
    args: argparse.Namespace, plan: DemoPlan, group: ProcessGroup, engine: Engine, redis_url: str
) -> None:
    start_processes(plan, group, lambda step: print(f"-- {step}", flush=True))
    factory = make_session_factory(engine)
    samples: Samples = {}
    driven: Counter[str] = Counter()

    def take(at: float) -> None:
        for name, value in sample(group, engine, redis_url, plan.log_dir).items():
            samples.setdefault(name, []).append((at, value))

    key = plan.env["RECON_GATEWAY_API_KEY"]
    keys = StoreIdempotencyKeys(factory)
    with GatewayClient(plan.sandbox_url, key, idempotency=keys) as gateway:
        endpoints = open_endpoints(gateway, args.holdings)
        started = time.monotonic()
        next_sample, n = started, 0
        while (now := time.monotonic()) < started + args.minutes * 60:
            if now >= next_sample:
                group.check_alive()
                take(now - started)
                next_sample += args.sample_seconds
            if now < started + n / args.rate:
                time.sleep(min(started + n / args.rate - now, 0.05))
                continue
            try:
                driven[drive_one(n, gateway, factory, endpoints)] += 1
            except httpx.HTTPError as exc:
                print(f"   drive {n}: {type(exc).__name__}", flush=True)
            n += 1
        take(time.monotonic() - started)
    print(f"-- drove {driven['credits']} credits and {driven['transfers']} transfers; settling")
    deadline = time.monotonic() + SETTLE_SECONDS
    archive, read = Path(plan.env["RECON_RETENTION_ARCHIVE_DIR"]), {}
    verdict = check_nothing_lost(factory, driven, archive, read)
    while not verdict["ok"] and time.monotonic() < deadline:
        time.sleep(5)
        verdict = check_nothing_lost(factory, driven, archive, read)
    times = [at for at, _ in samples["logs_mb"]]
    print(f"\nsoak: {times[-1] / 60:.1f} min at {args.rate}/s, {len(times)} samples")
    print(f"{'figure':<44}{'first':>12}{'last':>12}{'per hour':>14}")
    for name in sorted(samples):
        first, last = samples[name][0][1], samples[name][-1][1]
        print(f"{name:<44}{first:>12.2f}{last:>12.2f}{per_hour(samples[name]):>+14.2f}")
    report_goals(samples, times, first_cycle_seconds(args.retain_minutes))
    tables = sorted({p.name.split("-")[0] for p in archive.glob("*.jsonl.gz")})
    removed = {table: len(archived(archive, table, read)) for table in tables}
    print(f"\nremoved by retention (archived): {removed}")
    print(f"\nnothing lost or doubled: {verdict}")
    if not verdict["ok"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
