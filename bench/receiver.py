"""Benchmark: signed webhook deliveries accepted per second by one web process.

    make bench-receiver     # or .venv/bin/python bench/receiver.py [--duration 10] [--rounds 3]
    .venv/bin/python bench/receiver.py --http-parser httptools   # both servers parse in C

Three servers in turn, each one uvicorn process set up as `recon web` serves: a bare Litestar
endpoint answering 204 (the ceiling), `recon web` on PostgreSQL (BENCH_POSTGRES_URL's server)
and on SQLite. wrk (`apt-get install -y wrk`) replays pre-signed deliveries with unique ids, so
each request is a new delivery verified and durably committed before its 200. Per run: req/s,
p50, p99, the ratio to the bare rate of the same round, rows stored (every acknowledged
delivery must be), the web process's CPU seconds per 1,000 accepted and deliveries per commit;
then min / median / max over the rounds. Last, two `recon web` on one database, a wrk each,
one delivery in ten sent to both: every acknowledged delivery stored, none stored or accepted
twice.
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
from dataclasses import replace
from pathlib import Path
from typing import Final

from harness import cpu_seconds, postgres_database, spread, sqlite_database
from receiver_load import (
    HEADER,
    LUA,
    PATH,
    SHARED_EVERY,
    Load,
    Run,
    Server,
    commits,
    finish_wrk,
    read_acks,
    run_wrk,
    start_recon,
    start_server,
    start_wrk,
    stored_ids,
    write_deliveries,
)

from recon.demo.processes import ProcessGroup
from upstream.signatures.keys import new_secret

#: Seconds for the last in-flight commits to land after wrk stops, before the store is counted.
SETTLE_SECONDS: Final = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up per server")
    parser.add_argument(
        "--rounds", type=int, default=3, help="measure the servers in turn so often"
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (one cannot saturate)")
    parser.add_argument("--deliveries", type=int, default=120_000, help="pre-signed per run")
    parser.add_argument(
        "--http-parser",
        choices=("h11", "httptools"),
        default="h11",
        help="RECON_WEB_HTTP_PARSER of recon's server, and the bare endpoint's parser alike",
    )
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--skip-two-processes", action="store_true")
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.port, args.http_parser)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    with tempfile.TemporaryDirectory(prefix="recon-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        secret = new_secret("standard")
        script, warmup = work / "deliveries.lua", work / "warmup.tsv"
        script.write_text(LUA)
        write_deliveries(20_000, secret, warmup)
        load = Load(args.threads, args.connections, args.duration)
        group = ProcessGroup(work / "logs")
        stack.callback(group.stop)
        bare = [sys.executable, __file__, "--serve-bare", "--http-parser", args.http_parser]
        url = stack.enter_context(postgres_database("receiver"))
        servers = [start_server(group, "bare 204", bare, dict(os.environ))]
        servers.append(start_recon(group, "recon postgres", url, secret, work, args.http_parser))
        if not args.skip_sqlite:
            url = stack.enter_context(sqlite_database())
            servers.append(start_recon(group, "recon sqlite", url, secret, work, args.http_parser))
        for target in servers:
            run_wrk(target.name, target.port, warmup, script, replace(load, duration=args.warmup))
        rounds = []
        for _ in range(args.rounds):
            # Fresh deliveries signed just now for every run: a repeat would be a (cheaper)
            # duplicate, and a signature older than the tolerance would be refused.
            data = work / "deliveries.tsv"
            write_deliveries(args.deliveries, secret, data)
            rounds.append([measure(target, data, script, load) for target in servers])
        report(rounds, args)
        stack.close()  # the single servers stop before the two processes start
        if not args.skip_two_processes:
            two_processes(secret, work, script, warmup, args)


def serve_bare(port: int, parser: str) -> None:
    """A Litestar endpoint answering 204 unread, served as `recon web` serves recon."""
    from litestar import Litestar, get, post

    from recon.cli.http_protocol import serve
    from recon.cli.web_commands import tune_garbage_collector

    @post(PATH, status_code=204)
    async def accept() -> None:
        return None

    @get("/health")
    async def health() -> str:  # the harness waits for it, as for recon's
        return "ok"

    tune_garbage_collector()
    app = Litestar([accept, health], logging_config=None, openapi_config=None)
    serve(app, "127.0.0.1", port, parser=parser)


def measure(target: Server, data: Path, script: Path, load: Load) -> Run:
    """One wrk run against one server, with what it stored and spent meanwhile."""

    def read() -> tuple[int, float, int]:
        if target.database_url is None:
            return 0, cpu_seconds(target.pid) or 0.0, 0
        done = commits(target)  # asks the server itself: before its CPU is read
        stored = sum(stored_ids(target.database_url).values())
        return stored, cpu_seconds(target.pid) or 0.0, done

    before = read()
    run = run_wrk(target.name, target.port, data, script, load)
    time.sleep(SETTLE_SECONDS if target.database_url else 0.0)
    stored, cpu, done = (a - b for a, b in zip(read(), before, strict=True))
    if target.database_url is None:
        return replace(run, cpu_seconds=cpu)
    return replace(run, stored=int(stored), cpu_seconds=cpu, commits=int(done))


def report(rounds: list[list[Run]], args: argparse.Namespace) -> None:
    """Per round, every server against the bare rate of the same round; then the spread."""
    print(
        f"\nwrk -t{args.threads} -c{args.connections} -d{args.duration:g}s, one uvicorn process "
        f"({args.http_parser}) per server, {os.cpu_count()} CPUs, {len(rounds)} round(s)\n"
    )
    print(f"{HEADER}{'ratio':>7}{'stored':>8}{'cpu s/1k':>10}{'per commit':>11}")
    seen: dict[str, dict[str, list[float]]] = {}
    for number, runs in enumerate(rounds, start=1):
        for run in runs:
            done = run.requests if run.stored is None else run.stored
            found = {"ratio": run.rate / runs[0].rate}
            found["cpu"] = 1000 * (run.cpu_seconds or 0.0) / max(done, 1)
            if run.commits and run.stored is not None:
                found["per commit"] = run.stored / run.commits
            for key, value in found.items():
                seen.setdefault(run.name, {}).setdefault(key, []).append(value)
            stored = "-" if run.stored is None else str(run.stored)
            batch = f"{found['per commit']:.1f}" if "per commit" in found else "-"
            print(
                f"{run.row()}{found['ratio']:>7.2f}{stored:>8}{found['cpu']:>10.3f}{batch:>11}"
                f"   (round {number})"
            )
            if run.errors != "none":
                print(f"  socket errors: {run.errors}")
            if run.stored is not None and run.requests > args.deliveries:
                print(f"  note: {run.requests} requests > {args.deliveries} pre-signed: duplicates")
            if run.stored is not None and run.stored < run.requests - run.non_2xx:
                print("  WARNING: fewer rows stored than deliveries acknowledged")
    print(
        "\ncpu s/1k: the server process's CPU seconds per 1,000 accepted deliveries (requests "
        "for bare);\nper commit: deliveries per group commit (the receiver's /metrics).\n"
    )
    print(f"{'':<16}{'ratio to bare (min/median/max)':>32}{'cpu s/1k':>10}{'per commit':>11}")
    for name, found in seen.items():
        ratio = "-" if name == rounds[0][0].name else spread(found["ratio"])
        batch = f"{statistics.median(found['per commit']):.1f}" if "per commit" in found else "-"
        print(f"{name:<16}{ratio:>32}{statistics.median(found['cpu']):>10.3f}{batch:>11}")


def two_processes(
    secret: str, work: Path, script: Path, warmup: Path, args: argparse.Namespace
) -> None:
    """Two `recon web` on one database, a wrk each at once; the store against what they said."""
    load = Load(1, args.connections, args.duration)
    inputs = [work / "first.tsv", work / "second.tsv"]
    acks = [work / "acks-first.tsv", work / "acks-second.tsv"]
    with ExitStack() as stack:
        url = stack.enter_context(postgres_database("receiver"))
        group = ProcessGroup(work / "logs")
        stack.callback(group.stop)
        servers = [start_recon(group, f"recon {n}", url, secret, work) for n in ("one", "two")]
        for target in servers:
            run_wrk(target.name, target.port, warmup, script, replace(load, duration=args.warmup))
        earlier = set(stored_ids(url))
        write_deliveries(args.deliveries, secret, *inputs)
        before = [cpu_seconds(target.pid) or 0.0 for target in servers]
        running = [
            start_wrk(target.port, data, script, load, acks=ack)
            for target, data, ack in zip(servers, inputs, acks, strict=True)
        ]
        runs = [finish_wrk(t.name, w) for t, w in zip(servers, running, strict=True)]
        time.sleep(SETTLE_SECONDS)
        spent = [(cpu_seconds(t.pid) or 0.0) - b for t, b in zip(servers, before, strict=True)]
        stored = {k: v for k, v in stored_ids(url).items() if k not in earlier}
    heard = [read_acks(path) for path in acks]
    acknowledged = set(heard[0]) | set(heard[1])
    print(
        f"\nTwo recon web processes on one PostgreSQL database, a wrk -t1 -c{args.connections} "
        f"-d{args.duration:g}s each, 1 in {SHARED_EVERY} deliveries sent to both\n"
    )
    print(f"{HEADER}{'accepted':>10}{'cpu s/1k':>10}")
    for run, cpu, outcomes in zip(runs, spent, heard, strict=True):
        accepted = sum("a" in each for each in outcomes.values())
        print(f"{run.row()}{accepted:>10}{1000 * cpu / max(accepted, 1):>10.3f}")
        if run.errors != "none":
            print(f"  socket errors: {run.errors}")
    print(
        f"together {sum(r.rate for r in runs):.0f} req/s; {len(acknowledged)} distinct "
        f"deliveries acknowledged ({len(set(heard[0]) & set(heard[1]))} by both processes), "
        f"{sum(stored.values())} rows stored"
    )
    failures = {
        "acknowledged but not stored": len(acknowledged - set(stored)),
        "stored more than once": sum(1 for count in stored.values() if count > 1),
        "accepted by both processes (or twice)": sum(
            1 for i in acknowledged if (heard[0].get(i, "") + heard[1].get(i, "")).count("a") > 1
        ),
    }
    for what, count in failures.items():
        print(f"  {what}: {count}")
    in_flight = len(set(stored) - acknowledged)
    print(f"  stored but not acknowledged (in flight when wrk stopped): {in_flight}")
    print("FAILED" if any(failures.values()) else "ok: nothing lost, nothing doubled")


if __name__ == "__main__":
    main()
