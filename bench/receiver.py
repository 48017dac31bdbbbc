"""Benchmark: signed webhook deliveries accepted per second by one web process.

Three servers, one after the other, on the same server set-up (one uvicorn process, no access
log, uvloop, and recon's httptools protocol: recon.cli.http_protocol):

1. a bare Litestar endpoint answering 204 (the ceiling of this machine and server);
2. `recon web` on PostgreSQL: verify, commit to the inbox (group commit), answer 200;
3. `recon web` on SQLite, the same.

wrk drives each for the same duration and connections, replaying pre-signed Standard Webhooks
deliveries with unique ids (a Lua script rotates through them), so every request is a new
delivery that must be verified and durably committed before its 200. Per run: req/s, p50, p99,
the ratio to the bare rate of the same round, the rows stored (every acknowledged delivery must
be there), the web process's CPU seconds per 1,000 accepted deliveries and deliveries per
commit (together they say how many processes a given rate needs). Then the ratio's min, median
and max over the rounds.

Last, two `recon web` processes on one PostgreSQL database, each driven by its own wrk, one in
ten deliveries sent to both: every delivery either acknowledged must be stored, and stored and
accepted once.

Run: `make bench-receiver` or `.venv/bin/python bench/receiver.py [--duration 10] [--rounds 3]`.
Needs wrk (`apt-get install -y wrk`) and, for the PostgreSQL runs, RECON_BENCH_POSTGRES_URL or a
postgresql DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from receiver_load import (  # noqa: E402
    LUA,
    SHARED_EVERY,
    Load,
    Run,
    finish_wrk,
    read_acks,
    run_wrk,
    start_wrk,
    write_deliveries,
    write_shared_deliveries,
)
from receiver_servers import (  # noqa: E402
    ReconSetup,
    Server,
    postgres_admin_url,
    postgres_database,
    read,
    serve_bare,
    start_bare,
    start_recon,
    stored_ids,
)

from upstream.signatures.keys import new_secret  # noqa: E402

#: Seconds for the last in-flight commits to land after wrk stops, before the store is counted.
SETTLE_SECONDS: Final = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up per server")
    parser.add_argument(
        "--rounds", type=int, default=3, help="measure the servers in turn this many times"
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="wrk threads (one thread cannot saturate the bare app)",
    )
    parser.add_argument("--deliveries", type=int, default=120_000, help="pre-signed per run")
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument(
        "--skip-two-processes", action="store_true", help="skip the two-process run"
    )
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    from cryptography.fernet import Fernet

    with tempfile.TemporaryDirectory(prefix="recon-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        setup = ReconSetup(new_secret("standard"), Fernet.generate_key().decode(), work)
        script = work / "deliveries.lua"
        script.write_text(LUA)
        warmup = work / "warmup.tsv"
        write_deliveries(warmup, 20_000, setup.secret)
        load = Load(args.threads, args.connections, args.duration)

        servers = [start_bare(stack, __file__)]
        if not args.skip_postgres:
            url = stack.enter_context(postgres_database(postgres_admin_url()))
            servers.append(start_recon(stack, "recon postgres", url, setup))
        if not args.skip_sqlite:
            from migrations import runner as migrate

            url = f"sqlite:///{work / 'bench.db'}"
            migrate.upgrade(url)
            servers.append(start_recon(stack, "recon sqlite", url, setup))
        for target in servers:
            run_wrk(target.name, target.port, warmup, script, replace(load, duration=args.warmup))

        rounds = [
            [measure(target, setup, script, load, args.deliveries) for target in servers]
            for _ in range(args.rounds)
        ]
        report(rounds, args)
        stack.close()  # the single servers stop before the two processes start
        if not args.skip_postgres and not args.skip_two_processes:
            report_two(two_processes(setup, script, warmup, args), args)


def measure(target: Server, setup: ReconSetup, script: Path, load: Load, deliveries: int) -> Run:
    """One wrk run against one server, with what it stored and spent meanwhile."""
    # Fresh deliveries signed just now for every run: a repeat would be a (cheaper) duplicate,
    # and a signature older than the tolerance would be refused.
    data = setup.work / "deliveries.tsv"
    write_deliveries(data, deliveries, setup.secret)
    before = read(target)
    run = run_wrk(target.name, target.port, data, script, load)
    if target.database_url is not None:
        time.sleep(SETTLE_SECONDS)
    after = read(target)
    return replace(
        run,
        stored=after.stored - before.stored if target.database_url else None,
        cpu_seconds=after.cpu_seconds - before.cpu_seconds,
        commits=after.commits - before.commits if target.database_url else None,
    )


def report(rounds: list[list[Run]], args: argparse.Namespace) -> None:
    """Per round, every server against the bare rate of the same round; then the spread."""
    print(
        f"\nwrk -t{args.threads} -c{args.connections} -d{args.duration:g}s, one uvicorn process "
        f"per server, {os.cpu_count()} CPUs, {len(rounds)} round(s)\n"
    )
    print(
        f"{'server':<16}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'ratio':>7}{'non-2xx':>8}"
        f"{'stored':>8}{'cpu s/1k':>10}{'per commit':>11}"
    )
    ratios: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    per_commit: dict[str, list[float]] = {}
    for number, runs in enumerate(rounds, start=1):
        bare = runs[0].rate
        for run in runs:
            ratio = run.rate / bare
            ratios.setdefault(run.name, []).append(ratio)
            done = run.requests if run.stored is None else run.stored
            cpu_per_1k = 1000 * (run.cpu_seconds or 0.0) / max(done, 1)
            cpu.setdefault(run.name, []).append(cpu_per_1k)
            batch = "-"
            if run.commits and run.stored is not None:
                per_commit.setdefault(run.name, []).append(run.stored / run.commits)
                batch = f"{run.stored / run.commits:.1f}"
            stored = "-" if run.stored is None else str(run.stored)
            print(
                f"{run.name:<16}{run.rate:>9.0f}{run.p50_ms:>8.2f}{run.p99_ms:>8.2f}"
                f"{ratio:>7.2f}{run.non_2xx:>8}{stored:>8}{cpu_per_1k:>10.3f}{batch:>11}"
                f"   (round {number})"
            )
            if run.stored is not None and run.requests > args.deliveries:
                print(f"  note: {run.requests} requests > {args.deliveries} pre-signed: duplicates")
            if run.errors != "none":
                print(f"  socket errors: {run.errors}")
            if run.stored is not None and run.stored < run.requests - run.non_2xx:
                print("  WARNING: fewer rows stored than deliveries acknowledged")
    print(
        "\ncpu s/1k: the server process's CPU seconds per 1,000 accepted deliveries (requests "
        "for bare);\nper commit: deliveries per group commit (the receiver's /metrics).\n"
    )
    bare_name = rounds[0][0].name
    print(f"{'':<16}{'ratio to bare (min/median/max)':>32}{'cpu s/1k':>10}{'per commit':>11}")
    for name, values in ratios.items():
        spread = "-" if name == bare_name else _spread(values)
        commits = f"{statistics.median(per_commit[name]):.1f}" if name in per_commit else "-"
        print(f"{name:<16}{spread:>32}{statistics.median(cpu[name]):>10.3f}{commits:>11}")


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


@dataclass(frozen=True)
class TwoProcesses:
    """The two-process run: per process what wrk saw, and the store checked against the acks."""

    runs: list[Run]
    accepted: list[int]
    acknowledged: int
    by_both: int
    stored: int
    lost: int
    doubled: int
    accepted_twice: int
    unacknowledged: int


def two_processes(
    setup: ReconSetup, script: Path, warmup: Path, args: argparse.Namespace
) -> TwoProcesses:
    """Two `recon web` on one database, a wrk each at once; the store against what they said."""
    load = Load(1, args.connections, args.duration)
    first, second = setup.work / "first.tsv", setup.work / "second.tsv"
    acks = [setup.work / "acks-first.tsv", setup.work / "acks-second.tsv"]
    with ExitStack() as stack:
        url = stack.enter_context(postgres_database(postgres_admin_url()))
        servers = [start_recon(stack, f"recon {n}", url, setup) for n in ("one", "two")]
        for target in servers:
            run_wrk(target.name, target.port, warmup, script, replace(load, duration=args.warmup))
        earlier = set(stored_ids(url))
        write_shared_deliveries(first, second, args.deliveries, setup.secret)
        before = [read(target) for target in servers]
        running = [
            start_wrk(target.port, data, script, load, acks=ack)
            for target, data, ack in zip(servers, (first, second), acks, strict=True)
        ]
        runs = [finish_wrk(t.name, w) for t, w in zip(servers, running, strict=True)]
        time.sleep(SETTLE_SECONDS)
        after = [read(target) for target in servers]
        stored = {k: v for k, v in stored_ids(url).items() if k not in earlier}
    heard = [read_acks(path) for path in acks]
    acknowledged = set(heard[0]) | set(heard[1])
    return TwoProcesses(
        runs=[
            replace(run, cpu_seconds=a.cpu_seconds - b.cpu_seconds)
            for run, a, b in zip(runs, after, before, strict=True)
        ],
        accepted=[sum("a" in outcomes for outcomes in h.values()) for h in heard],
        acknowledged=len(acknowledged),
        by_both=len(set(heard[0]) & set(heard[1])),
        stored=sum(stored.values()),
        lost=len(acknowledged - set(stored)),
        doubled=sum(1 for count in stored.values() if count > 1),
        accepted_twice=sum(
            1 for i in acknowledged if (heard[0].get(i, "") + heard[1].get(i, "")).count("a") > 1
        ),
        unacknowledged=len(set(stored) - acknowledged),
    )


def report_two(two: TwoProcesses, args: argparse.Namespace) -> None:
    print(
        f"\nTwo recon web processes on one PostgreSQL database, a wrk -t1 -c{args.connections} "
        f"-d{args.duration:g}s each, 1 in {SHARED_EVERY} deliveries sent to both\n"
    )
    print(
        f"{'server':<16}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'non-2xx':>8}{'accepted':>10}{'cpu s/1k':>10}"
    )
    for run, accepted in zip(two.runs, two.accepted, strict=True):
        cpu_per_1k = 1000 * (run.cpu_seconds or 0.0) / max(accepted, 1)
        print(
            f"{run.name:<16}{run.rate:>9.0f}{run.p50_ms:>8.2f}{run.p99_ms:>8.2f}{run.non_2xx:>8}"
            f"{accepted:>10}{cpu_per_1k:>10.3f}"
        )
        if run.errors != "none":
            print(f"  socket errors: {run.errors}")
    print(
        f"together {sum(r.rate for r in two.runs):.0f} req/s; {two.acknowledged} distinct "
        f"deliveries acknowledged ({two.by_both} by both processes), {two.stored} rows stored"
    )
    failures = {
        "acknowledged but not stored": two.lost,
        "stored more than once": two.doubled,
        "accepted by both processes (or twice)": two.accepted_twice,
    }
    for what, count in failures.items():
        print(f"  {what}: {count}")
    print(f"  stored but not acknowledged (in flight when wrk stopped): {two.unacknowledged}")
    verdict = "FAILED" if any(failures.values()) else "ok: nothing lost, nothing doubled"
    print(verdict)


if __name__ == "__main__":
    main()
