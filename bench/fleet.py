"""Fleet: where the gateway budget goes with many holdings and Zipf-shaped payments.

    .venv/bin/python bench/fleet.py --holdings 200 --rounds 2 --round-seconds 30 --ceiling 60
    .venv/bin/python bench/fleet.py --holdings 1000,10000 --ceiling 600            # quiet machine
    .venv/bin/python bench/fleet.py --holdings 100000 --ceiling 600 --first-rps 1000

Per N: the sandbox with N holdings made through its bulk control API, recon as the Procfile runs
it (web, two workers, scheduler) on a fresh PostgreSQL database and a private Redis, one gateway
budget (`--rps`). Payments: `--rate` inbound credits a second, half of them to 1% of the
holdings (Zipf-shaped), 2% of their webhooks dropped by the sandbox. Each round drives
`--round-seconds` of payments, then waits (up to the ceiling and a margin) for their postings
and prints, min / median / max over the rounds: seconds from a posting to its storage (p50 and
p99, notified and silent apart), the share of holdings past the staleness ceiling, gateway
requests a second against the budget (and per holding an hour), the incremental reconcile
pass's seconds, and the workers' and web's RSS; then how long each phase of the size took.
Figures are only worth taking on a quiet machine.

The first read of every holding costs (holdings + endpoints) requests: 4,000 s at 50/s for
100,000 holdings. `--first-rps` runs the workers at a raised budget until every holding has
been read once, then restarts them at `--rps` for the measured rounds (the issue allows it:
the goal is the steady state, not the first day). recon runs with production's intervals
(`TIMINGS`), not the demo's hurried ones.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import httpx
import msgspec
from harness import metric, percentile, process_figures, quiet_logs, services, spread
from sqlalchemy import func, select

from recon.demo.processes import ProcessGroup, free_port, recon_argv, wait_until_ready
from recon.demo.run import DEMO_TIMINGS, plan_demo
from reconciliation import LAST_PASS_MILLIS
from reconciliation.store import watermarks
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import ActivityCursor, Holding, Notification, Posting
from reconciliation.store.types import utcnow
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import HoldingAddress, ValueUnit

#: recon's intervals: production's (every demo timing dropped), with the ceiling of `--ceiling`.
TIMINGS: Final = {
    "RECON_POLL_ACTIVITY_SECONDS": "15",
    "RECON_SNAPSHOT_BALANCES_SECONDS": "60",
    "RECON_DISCOVER_HOLDINGS_SECONDS": "300",
    "RECON_RECONCILE_SECONDS": "30",
    "RECON_SWEEP_SECONDS": "30",
}
#: The recon processes whose RSS is reported; the workers are the ones a budget change restarts.
WORKERS: Final = ("worker1", "worker2")
#: Share of payments the busiest 1% of holdings carry, and of webhooks the sandbox drops.
HOT_SHARE: Final = 0.5
DROPPED: Final = 0.02
#: The first reads are given up only after this long without one more holding read.
STALLED_SECONDS: Final = 600.0
#: Worker metrics: every gateway request takes one slot, observed once in this histogram.
SLOTS: Final = "recon_worker_gateway_rate_limit_wait_seconds_count"


def gateway_requests(ports: list[int]) -> float:
    """Gateway requests the workers sent so far (their rate limiter's granted slots)."""
    return sum(metric(port, SLOTS) for port in ports)


def start_fleet(
    plan_env: dict[str, str], group: ProcessGroup, sandbox: str, n: int, rps: float
) -> tuple[list[int], list[dict[str, str]]]:
    """The sandbox with `n` holdings (before recon starts, so its first discovery finds them),
    then web, two workers at `rps` (their metrics ports returned, with the holdings' refs) and
    the scheduler."""
    group.start("sandbox", recon_argv("sandbox", "--port", sandbox.rsplit(":", 1)[1]), plan_env)
    wait_until_ready(f"{sandbox}/_sandbox/state", group)
    bulk = {"holdings": n, "postings": 2 * n, "seed": 37}
    refs = httpx.post(f"{sandbox}/_sandbox/scenarios/bulk", json=bulk, timeout=600).json()
    drop = {"eventType": "PAYMENT_RECEIVED", "kind": "drop", "rate": DROPPED}
    httpx.post(f"{sandbox}/_sandbox/faults/deliveries", json=drop).raise_for_status()
    web_port = plan_env["PORT"]
    group.start("web", recon_argv("web", "--port", web_port), plan_env)
    wait_until_ready(f"http://127.0.0.1:{web_port}/health", group)
    ports = start_workers(plan_env, group, rps)
    group.start("scheduler", recon_argv("scheduler"), plan_env)
    return ports, refs["holdings"]


def start_workers(plan_env: dict[str, str], group: ProcessGroup, rps: float) -> list[int]:
    """Two workers on one gateway budget of `rps`; their metrics ports."""
    env = {**plan_env, "RECON_GATEWAY_RPS": f"{rps:g}"}
    ports = [free_port(), free_port()]
    for name, port in zip(WORKERS, ports, strict=True):
        group.start(name, recon_argv("worker", "--metrics-port", str(port)), env)
    for port in ports:  # their request counts are read from there
        wait_until_ready(f"http://127.0.0.1:{port}/metrics", group)
    return ports


def restart_workers(plan_env: dict[str, str], group: ProcessGroup, rps: float) -> list[int]:
    """The workers stopped (SIGTERM: they finish their messages) and started at `rps`."""
    leaving = [p for p in group.processes if p.name in WORKERS]
    for managed in leaving:
        managed.popen.terminate()
    for managed in leaving:
        managed.popen.wait(timeout=60)
        group.processes.remove(managed)
    return start_workers(plan_env, group, rps)


def wait_for_first_reads(factory: Any, n: int) -> None:
    """Until every holding has been read once (discovery reads each endpoint, then its holding's
    activity and balance: minutes at 100,000 holdings, longer on a busy machine), saying how far
    it has got every minute; given up only when it stops moving for `STALLED_SECONDS`."""
    moved = said = time.monotonic()
    seen = -1
    while True:
        with factory() as s:
            read = s.scalar(select(func.count()).where(ActivityCursor.reads_completed > 0)) or 0
        if read >= n:
            return
        now = time.monotonic()
        if read != seen:
            moved, seen = now, read
        elif now - moved > STALLED_SECONDS:
            raise SystemExit(f"bench: the first reads stopped at {read:,} of {n:,} holdings")
        if now - said > 60:
            print(f"   {read:,} of {n:,} holdings read once", flush=True)
            said = now
        time.sleep(2)


def slowest_pass(log_dir: Path, read_to: dict[str, int]) -> str:
    """The slowest reconcile pass the workers logged since the last call (each log read on from
    where the last call stopped), with its slowest phases: where a pass's seconds go."""

    def total(seconds: dict[str, float]) -> float:
        return sum(seconds.get(phase, 0) for phase in ("alerts", "drift", "matching"))

    slowest: dict[str, float] = {}
    for name in WORKERS:
        path = log_dir / f"{name}.log"
        with path.open("rb") as log:
            log.seek(read_to.get(name, 0))
            lines, read_to[name] = log.read().splitlines(), log.tell()
        for line in lines:
            if b'"reconcile.pass"' in line:
                seconds = json.loads(line).get("seconds", {})
                slowest = max(slowest, seconds, key=total)
    top = sorted(slowest.items(), key=lambda kv: -kv[1])[:5]
    return ", ".join(f"{k} {v:.2f}" for k, v in top) or "none logged"


def pick(rng: random.Random, holdings: list[HoldingAddress]) -> HoldingAddress:
    """Half the payments to the busiest 1% of holdings, the rest to everyone else."""
    hot = max(1, len(holdings) // 100)
    if rng.random() < HOT_SHARE:
        return holdings[rng.randrange(hot)]
    return holdings[rng.randrange(hot, len(holdings))] if len(holdings) > hot else holdings[0]


def run_size(args: argparse.Namespace, n: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """The figures of every round at `n` holdings, and the seconds each phase took."""
    figures: dict[str, list[float]] = {}
    phases: dict[str, float] = {}
    clock = time.monotonic()
    with services(f"fleet{n}") as (workdir, db_url, redis_url):
        env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url}
        plan = plan_demo(env, workdir / f"state{n}", workdir / "report.html")
        for name in DEMO_TIMINGS:  # production's defaults, not the demo's hurried ones
            plan.env.pop(name, None)
        plan.env.update(TIMINGS)
        plan.env["RECON_GATEWAY_RPS"] = f"{args.rps:g}"
        plan.env["RECON_MAX_STALENESS_SECONDS"] = f"{args.ceiling:g}"
        group, engine = ProcessGroup(plan.log_dir), make_engine(db_url)
        factory = make_session_factory(engine)
        try:
            first_rps = max(args.rps, args.first_rps or args.rps)
            ports, refs = start_fleet(plan.env, group, plan.sandbox_url, n, first_rps)
            phases["start"], clock = time.monotonic() - clock, time.monotonic()
            print(f"-- {n:,} holdings: started in {phases['start']:.0f} s", flush=True)
            holdings = msgspec.convert(refs, list[HoldingAddress])
            wait_for_first_reads(factory, n)
            if first_rps != args.rps:
                ports = restart_workers(plan.env, group, args.rps)
            phases["first reads"], clock = time.monotonic() - clock, time.monotonic()
            print(f"-- every holding read once in {phases['first reads']:.0f} s", flush=True)
            while args.hold and not Path(args.hold).exists():  # other work finishing first
                time.sleep(5)
            phases["held"], clock = time.monotonic() - clock, time.monotonic()
            rng, read_to = random.Random(n), dict.fromkeys(WORKERS, 0)
            with GatewayClient(plan.sandbox_url, plan.env["RECON_GATEWAY_API_KEY"]) as gateway:
                for _ in range(args.rounds):
                    for name, value in one_round(args, gateway, holdings, rng, factory, ports):
                        figures.setdefault(name, []).append(value)
                    print(
                        f"   slowest pass of the round: {slowest_pass(plan.log_dir, read_to)}",
                        flush=True,
                    )
                    for managed in group.processes:
                        if managed.name in ("web", *WORKERS):
                            rss = process_figures(managed.popen.pid)["rss_mb"]
                            figures.setdefault(f"{managed.name} RSS MB", []).append(rss)
            phases["rounds"] = time.monotonic() - clock
        finally:
            group.stop()
            engine.dispose()
    return figures, phases


def one_round(
    args: argparse.Namespace,
    gateway: GatewayClient,
    holdings: list[HoldingAddress],
    rng: random.Random,
    factory: Any,
    ports: list[int],
) -> list[tuple[str, float]]:
    receipts: list[uuid.UUID] = []
    sent_before, started = gateway_requests(ports), time.monotonic()
    count = int(args.rate * args.round_seconds)
    for i in range(count):
        time.sleep(max(0.0, started + i / args.rate - time.monotonic()))
        result = gateway.simulate_inbound_credit(
            CreditRequest(
                target=pick(rng, holdings), value_unit=ValueUnit.fiat("NGN"), amount_minor_units=100
            )
        )
        receipt = getattr(getattr(result, "value", None), "accounts_posting_receipt_ref", None)
        if receipt is not None:  # a replayed write (never here: each credit has its own key)
            receipts.append(receipt)
    driven = time.monotonic() - started
    rps = (gateway_requests(ports) - sent_before) / driven

    def stored() -> list[Any]:
        with factory() as s:
            return list(
                s.execute(
                    select(Posting.receipt_ref, Posting.posted_at, Posting.ingested_at).where(
                        Posting.receipt_ref.in_(receipts)
                    )
                )
            )

    deadline = time.monotonic() + (args.settle if args.settle is not None else args.ceiling + 60)
    while len(rows := stored()) < len(receipts) and time.monotonic() < deadline:
        time.sleep(1)
    with factory() as s:
        notified = set(
            s.scalars(
                select(Notification.receipt_ref).where(Notification.receipt_ref.in_(receipts))
            )
        )
        now = utcnow()
        total = s.scalar(select(func.count()).select_from(Holding)) or 1
        stale = s.scalar(
            select(func.count()).where(
                ActivityCursor.last_polled_at < now - timedelta(seconds=args.ceiling)
            )
        )
        pass_ms = watermarks.read(s, LAST_PASS_MILLIS, -1)
    lag: dict[bool, list[float]] = {True: [], False: []}
    for receipt, posted, ingested in rows:
        lag[receipt in notified].append((ingested - posted).total_seconds())
    out = [("gateway requests/s", rps), ("budget share", rps / args.rps)]
    out.append(("requests/holding/h", rps * 3600 / len(holdings)))
    for kind, values in (("notified", lag[True]), ("silent", lag[False])):
        out += [
            (f"{kind} p50 s", percentile(values, 0.5)),
            (f"{kind} p99 s", percentile(values, 0.99)),
        ]
    out += [
        ("not stored", float(len(receipts) - len(rows))),
        ("past ceiling", (stale or 0) / total),
    ]
    return [*out, ("reconcile pass s", pass_ms / 1000)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--holdings", default="1000,10000,100000", help="comma-separated Ns")
    parser.add_argument("--rate", type=float, default=20.0, help="payments a second")
    parser.add_argument("--rps", type=float, default=50.0, help="RECON_GATEWAY_RPS")
    parser.add_argument("--ceiling", type=float, default=300.0, help="RECON_MAX_STALENESS_SECONDS")
    parser.add_argument(
        "--first-rps", type=float, help="the budget of the first reads (then --rps is measured)"
    )
    parser.add_argument(
        "--hold", help="after the first reads, wait until this file exists to start the rounds"
    )
    parser.add_argument(
        "--settle", type=float, help="seconds to wait for a round's postings (the ceiling + 60)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--round-seconds", type=float, default=120.0)
    args = parser.parse_args()
    quiet_logs()
    for n in (int(x) for x in args.holdings.split(",")):
        figures, phases = run_size(args, n)
        first = f", first reads at {args.first_rps:g}/s" if args.first_rps else ""
        print(
            f"\nN = {n:,} holdings, {args.rate:g} payments/s, budget {args.rps:g}/s{first}, "
            f"ceiling {args.ceiling:g} s, {args.rounds} rounds (min / median / max)"
        )
        for name, values in figures.items():
            shown = [v for v in values if not math.isnan(v)] or [math.nan]  # NaN: none of it
            print(f"  {name:<22}{spread(shown)}   (mean {statistics.fmean(shown):.2f})")
        took = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in phases.items())
        print(f"  took {sum(phases.values()):.0f} s: {took}")


if __name__ == "__main__":
    main()
