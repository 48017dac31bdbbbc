"""Benchmark: signed webhook deliveries accepted per second by one web process.

    make bench-receiver     # or .venv/bin/python bench/receiver.py [--duration 10] [--rounds 3]

Three servers in turn, each one uvicorn process set up as `recon web` serves: a bare Litestar
endpoint answering 204 (the ceiling), `recon web` on PostgreSQL (BENCH_POSTGRES_URL's server)
and on SQLite. wrk (`apt-get install -y wrk`) replays pre-signed deliveries with unique ids, so
each request is a new delivery verified and durably committed before its 200. Per run: req/s,
p50, p99, the ratio to the bare rate of the same round, rows stored (every acknowledged
delivery must be), the web process's CPU seconds per 1,000 accepted and deliveries per commit;
then min / median / max over the rounds. Last, two `recon web` on one database, a wrk each,
one delivery in ten sent to both: every acknowledged delivery stored, none stored or accepted
twice: wrk records which deliveries each server acknowledged and with what outcome (the
request then carries its delivery id as X-Request-Id, which the receiver echoes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from harness import cpu_seconds, metric, postgres_database, recon_env, spread, sqlite_database

from recon.demo.processes import ProcessGroup, free_port, recon_argv, wait_until_ready
from upstream.signatures.keys import new_secret
from upstream.signatures.signing import sign_delivery

#: The receiver path, the same on the bare app so wrk sends identical requests to both.
PATH: Final = "/webhooks/company"

#: wrk script: each wrk thread takes every n-th pre-signed delivery and sends them in turn.
#: With BENCH_ACKS set, each thread keeps `acked[id] = outcomes` (first letters, one per 200)
#: and `done` writes them all to that file as `id<TAB>outcomes` lines.
LUA: Final = r"""
local tid_counter = 0
local threads = {}
function setup(thread)
  thread:set("tid", tid_counter)
  tid_counter = tid_counter + 1
  threads[#threads + 1] = thread
end

local record = os.getenv("BENCH_ACKS")
local requests = {}
local position = 0
acked = {}
function init(args)
  local count = tonumber(os.getenv("BENCH_THREADS"))
  local i = 0
  for line in io.lines(os.getenv("BENCH_DELIVERIES")) do
    if i % count == tid then
      local id, ts, sig, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      local headers = {
        ["Content-Type"] = "application/json",
        ["webhook-id"] = id,
        ["webhook-timestamp"] = ts,
        ["webhook-signature"] = sig,
      }
      if record then headers["x-request-id"] = id end
      requests[#requests + 1] = wrk.format("POST", nil, headers, body)
    end
    i = i + 1
  end
end

function request()
  position = position + 1
  if position > #requests then
    position = 1  -- wrapped: repeats are duplicates; the report says when this happened
  end
  return requests[position]
end

if record then
  function response(status, headers, body)
    if status == 200 then
      local id = headers["x-request-id"]
      local outcome = body:match('"outcome":"(%a)') or "?"
      if id then acked[id] = (acked[id] or "") .. outcome end
    end
  end

  function done(summary, latency, sent)
    local out = io.open(record, "w")
    for _, thread in ipairs(threads) do
      for id, outcomes in pairs(thread:get("acked")) do
        out:write(id, "\t", outcomes, "\n")
      end
    end
    out:close()
  end
end
"""

#: A PAYMENT_RECEIVED body in the shape of docs/decisions.md; the refs and amounts vary.
BODY_TEMPLATE: Final = (
    '{{"id":"{event_id}","event":"PAYMENT_RECEIVED","createdAt":"2026-11-22T00:48:01.123Z",'
    '"data":{{"transferRef":null,"receiptRef":"{refs[1]}","accountRef":"{refs[2]}",'
    '"endpointRef":"{refs[3]}","holdingRef":"{refs[4]}","accountNumber":"{number:010d}",'
    '"bankCode":"000","amount":"{major}.{minor:02d}","currency":"NGN","status":"SUCCESSFUL",'
    '"narration":"bench inbound credit"}}}}'
)
#: wrk's load on one server (two threads: one cannot saturate it), its warm-up seconds per
#: server, and the deliveries pre-signed per run (a run sending more repeats them: the report
#: says so, as the repeats are cheaper duplicates).
THREADS: Final = 2
CONNECTIONS: Final = 32
WARMUP_SECONDS: Final = 2.0
DELIVERIES: Final = 120_000
#: In the two-process run, every this-many-th delivery goes to both servers (a provider retry
#: landing on the other process): enough races to show none is stored twice.
SHARED_EVERY: Final = 10


@dataclass(frozen=True)
class Run:
    """What wrk measured against one server, and what the server spent on it."""

    name: str
    requests: int
    rate: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    errors: str
    stored: int | None = None
    cpu_seconds: float | None = None
    commits: int | None = None

    def row(self) -> str:
        """What wrk saw, under HEADER."""
        return f"{self.name:<16}{self.rate:>9.0f}{self.p50_ms:>8.2f}{self.p99_ms:>8.2f}{self.non_2xx:>8}"


#: The columns of `Run.row`.
HEADER: Final = f"{'server':<16}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'non-2xx':>8}"


def signed_lines(count: int, secret: str) -> Iterator[str]:
    """`count` deliveries signed now (unique ids, realistic bodies), as wrk's input lines."""
    now = int(time.time())
    run = uuid.uuid4().int
    for n in range(count):
        event_id = str(uuid.UUID(int=(run + n) % 2**128))
        refs = [uuid.UUID(int=(run + 7 * n + k) % 2**128) for k in range(5)]
        body = BODY_TEMPLATE.format(
            event_id=event_id, refs=refs, number=n % 10**10, major=n % 100_000, minor=n % 100
        )
        signed = sign_delivery(
            "standard", secret, delivery_id=event_id, timestamp=now, body=body.encode()
        )
        yield f"{event_id}\t{signed['webhook-timestamp']}\t{signed['webhook-signature']}\t{body}\n"


def write_deliveries(count: int, secret: str, *paths: Path) -> None:
    """`count` pre-signed deliveries per file, as wrk's tab-separated input. With two files,
    every SHARED_EVERY-th line is the same in both: the two wrk processes start together and
    send at about the same pace, so a shared delivery reaches both servers at about the same
    moment, the race the store must settle."""
    lines = signed_lines(len(paths) * count, secret)
    with ExitStack() as files:
        outs = [files.enter_context(path.open("w")) for path in paths]
        for n in range(count):
            line = next(lines)
            for k, out in enumerate(outs):
                out.write(line if k == 0 or n % SHARED_EVERY == SHARED_EVERY - 1 else next(lines))


def start_wrk(
    port: int, data: Path, script: Path, seconds: float, threads: int = THREADS, acks: str = ""
) -> subprocess.Popen[str]:
    """wrk against the receiver path of `port`, running; `finish_wrk` reads its report. With
    `acks`, the Lua script records there what each delivery was answered."""
    env = {**os.environ, "BENCH_DELIVERIES": str(data), "BENCH_THREADS": str(threads)}
    env |= {"BENCH_ACKS": acks} if acks else {}
    argv = ["wrk", f"-t{threads}", f"-c{CONNECTIONS}", f"-d{seconds:g}s"]
    argv += ["--latency", "--timeout", "10s", "-s", str(script), f"http://127.0.0.1:{port}{PATH}"]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish_wrk(name: str, process: subprocess.Popen[str]) -> Run:
    """Wait for wrk and read its report."""
    output, errors = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"wrk failed ({process.returncode}):\n{errors}\n{output}")

    def find(pattern: str, default: str | None = None) -> str:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None and default is None:
            raise SystemExit(f"unexpected wrk output:\n{output}")
        return match.group(1) if match else str(default)

    def ms(text: str) -> float:
        number = text.rstrip("usm")
        return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[text[len(number) :]]

    return Run(
        name=name,
        requests=int(find(r"(\d+) requests in")),
        rate=float(find(r"Requests/sec:\s+([\d.]+)")),
        p50_ms=ms(find(r"^\s+50%\s+(\S+)")),
        p99_ms=ms(find(r"^\s+99%\s+(\S+)")),
        non_2xx=int(find(r"Non-2xx or 3xx responses: (\d+)", "0")),
        errors=find(r"Socket errors: (.*)", "none"),
    )


def run_wrk(target: Server, data: Path, script: Path, seconds: float) -> Run:
    return finish_wrk(target.name, start_wrk(target.port, data, script, seconds))


def read_acks(path: Path) -> dict[str, str]:
    """What one wrk run recorded: delivery id -> first letters of the outcomes it heard."""
    with path.open() as lines:
        return dict(line.rstrip("\n").partition("\t")[::2] for line in lines)


@dataclass(frozen=True)
class Server:
    """A running server: its name, port and process, and the database it stores into."""

    name: str
    port: int
    pid: int
    database_url: str | None


def start_server(
    group: ProcessGroup, name: str, argv: list[str], env: dict[str, str], url: str | None = None
) -> Server:
    """`argv --port PORT` in `group` (its log in the group's folder), once it answers /health."""
    port = free_port()
    process = group.start(name.replace(" ", "-"), [*argv, "--port", str(port)], env)
    wait_until_ready(f"http://127.0.0.1:{port}/health", group, timeout=30)
    return Server(name, port, process.popen.pid, url)


def start_recon(group: ProcessGroup, name: str, url: str, secret: str, work: Path) -> Server:
    """`recon web` on `url`: no registration, no workers (the receiver alone)."""
    state = work / f"state-{name.replace(' ', '-')}"
    env = recon_env(url, state, RECON_WEBHOOK_SECRETS=secret)
    argv = recon_argv("web", "--no-register", "--no-workers")
    return start_server(group, name, argv, env, url)


def stored_ids(database_url: str) -> dict[str, int]:
    """Every delivery id in the inbox and how many rows it has."""
    from sqlalchemy import func, select

    from reconciliation.store.db import make_engine
    from reconciliation.store.models import Delivery

    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            query = select(Delivery.delivery_id, func.count()).group_by(Delivery.delivery_id)
            return {delivery_id: int(count) for delivery_id, count in conn.execute(query)}
    finally:
        engine.dispose()


#: The receiver's commits so far: its batch-size histogram's count. One batch is one
#: transaction (on PostgreSQL one autocommitted INSERT); PostgreSQL's own count
#: (pg_stat_database) would also do, but a busy backend publishes it only after ten idle
#: seconds, which would lengthen every run.
COMMITS: Final = "recon_webhook_commit_batch_size_count"
#: Seconds for the last in-flight commits to land after wrk stops, before the store is counted.
SETTLE_SECONDS: Final = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument(
        "--rounds", type=int, default=3, help="measure the servers in turn so often"
    )
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.port)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    with tempfile.TemporaryDirectory(prefix="recon-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        secret = new_secret("standard")
        script, warmup = work / "deliveries.lua", work / "warmup.tsv"
        script.write_text(LUA)
        write_deliveries(20_000, secret, warmup)
        group = ProcessGroup(work / "logs")
        stack.callback(group.stop)
        bare = [sys.executable, __file__, "--serve-bare"]
        url = stack.enter_context(postgres_database("receiver"))
        servers = [start_server(group, "bare 204", bare, dict(os.environ))]
        servers.append(start_recon(group, "recon postgres", url, secret, work))
        if not args.skip_sqlite:
            url = stack.enter_context(sqlite_database())
            servers.append(start_recon(group, "recon sqlite", url, secret, work))
        for target in servers:
            run_wrk(target, warmup, script, WARMUP_SECONDS)
        rounds = []
        for _ in range(args.rounds):
            # Fresh deliveries signed just now for every run: a repeat would be a (cheaper)
            # duplicate, and a signature older than the tolerance would be refused.
            data = work / "deliveries.tsv"
            write_deliveries(DELIVERIES, secret, data)
            rounds.append([measure(target, data, script, args.duration) for target in servers])
        report(rounds, args.duration)
        stack.close()  # the single servers stop before the two processes start
        two_processes(secret, work, script, warmup, args.duration)


def serve_bare(port: int) -> None:
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
    serve(app, "127.0.0.1", port)


def measure(target: Server, data: Path, script: Path, seconds: float) -> Run:
    """One wrk run against one server, with what it stored and spent meanwhile."""

    def read() -> tuple[int, float, float]:
        if target.database_url is None:
            return 0, cpu_seconds(target.pid) or 0.0, 0.0
        done = metric(target.port, COMMITS)  # asks the server itself: before its CPU is read
        stored = sum(stored_ids(target.database_url).values())
        return stored, cpu_seconds(target.pid) or 0.0, done

    before = read()
    run = run_wrk(target, data, script, seconds)
    time.sleep(SETTLE_SECONDS if target.database_url else 0.0)
    stored, cpu, done = (a - b for a, b in zip(read(), before, strict=True))
    if target.database_url is None:
        return replace(run, cpu_seconds=cpu)
    return replace(run, stored=int(stored), cpu_seconds=cpu, commits=int(done))


def report(rounds: list[list[Run]], seconds: float) -> None:
    """Per round, every server against the bare rate of the same round; then the spread."""
    print(
        f"\nwrk -t{THREADS} -c{CONNECTIONS} -d{seconds:g}s, one uvicorn process "
        f"per server, {os.cpu_count()} CPUs, {len(rounds)} round(s)\n"
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
            if run.stored is not None and run.requests > DELIVERIES:
                print(f"  note: {run.requests} requests > {DELIVERIES} pre-signed: duplicates")
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


def two_processes(secret: str, work: Path, script: Path, warmup: Path, seconds: float) -> None:
    """Two `recon web` on one database, a wrk each at once; the store against what they said."""
    inputs = [work / "first.tsv", work / "second.tsv"]
    acks = [work / "acks-first.tsv", work / "acks-second.tsv"]
    with ExitStack() as stack:
        url = stack.enter_context(postgres_database("receiver"))
        group = ProcessGroup(work / "logs")
        stack.callback(group.stop)
        servers = [start_recon(group, f"recon {n}", url, secret, work) for n in ("one", "two")]
        for target in servers:
            run_wrk(target, warmup, script, WARMUP_SECONDS)
        earlier = set(stored_ids(url))
        write_deliveries(DELIVERIES, secret, *inputs)
        running = [
            start_wrk(target.port, data, script, seconds, threads=1, acks=str(ack))
            for target, data, ack in zip(servers, inputs, acks, strict=True)
        ]
        runs = [finish_wrk(t.name, w) for t, w in zip(servers, running, strict=True)]
        time.sleep(SETTLE_SECONDS)
        stored = {k: v for k, v in stored_ids(url).items() if k not in earlier}
    heard = [read_acks(path) for path in acks]
    acknowledged = set(heard[0]) | set(heard[1])
    print(
        f"\nTwo recon web processes on one PostgreSQL database, a wrk -t1 -c{CONNECTIONS} "
        f"-d{seconds:g}s each, 1 in {SHARED_EVERY} deliveries sent to both\n\n{HEADER}"
    )
    for run in runs:
        print(run.row() + (f"\n  socket errors: {run.errors}" if run.errors != "none" else ""))
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
