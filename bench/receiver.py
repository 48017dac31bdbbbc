"""Benchmark: signed webhook deliveries accepted per second by one web process.

Three servers, one after the other, under the same uvicorn set-up (one process, no access log):

1. a bare Litestar endpoint answering 204 (the ceiling of this machine and server);
2. `recon web` on PostgreSQL: verify, commit to the inbox (group commit), answer 200;
3. `recon web` on SQLite, the same.

wrk drives each for the same duration and connections, replaying pre-signed Standard Webhooks
deliveries with unique ids (a Lua script rotates through them), so every request is a new
delivery that must be verified and durably committed before its 200. Prints req/s, p50, p99,
the ratio to the bare rate, and checks that the store holds every acknowledged delivery.

Run: `make bench-receiver` or `.venv/bin/python bench/receiver.py [--duration 10]`. Needs wrk
(`apt-get install -y wrk`) and, for the PostgreSQL run, RECON_BENCH_POSTGRES_URL or a postgresql
DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
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
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

ROOT: Final = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from upstream.signatures.keys import new_secret  # noqa: E402
from upstream.signatures.signing import sign_delivery  # noqa: E402

#: The receiver path, the same on the bare app so wrk sends identical requests to both.
PATH: Final = "/webhooks/company"
#: Admin token for the benchmark's throwaway processes.
ADMIN_TOKEN: Final = "bench-admin-token-0123456789abcdef"
#: Default PostgreSQL server to create the throwaway benchmark database on.
DEFAULT_POSTGRES: Final = "postgresql://postgres@127.0.0.1:5432/postgres"

#: wrk script: each wrk thread takes every n-th pre-signed delivery and sends them in turn.
LUA: Final = r"""
local tid_counter = 0
function setup(thread)
  thread:set("tid", tid_counter)
  tid_counter = tid_counter + 1
end

local requests = {}
local position = 0
function init(args)
  local threads = tonumber(os.getenv("BENCH_THREADS"))
  local i = 0
  for line in io.lines(os.getenv("BENCH_DELIVERIES")) do
    if i % threads == tid then
      local id, ts, sig, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      requests[#requests + 1] = wrk.format("POST", nil, {
        ["Content-Type"] = "application/json",
        ["webhook-id"] = id,
        ["webhook-timestamp"] = ts,
        ["webhook-signature"] = sig,
      }, body)
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
"""


@dataclass(frozen=True)
class Run:
    """What wrk measured against one server."""

    name: str
    requests: int
    rate: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    errors: str
    stored: int | None = None


def bare_app() -> object:
    """The reference: a Litestar endpoint that answers 204 without reading the body."""
    from litestar import Litestar, post

    @post(PATH, status_code=204)
    async def accept() -> None:
        return None

    return Litestar(route_handlers=[accept], logging_config=None, openapi_config=None)


def serve_bare(port: int) -> None:
    import uvicorn

    from recon.cli.web_commands import tune_garbage_collector

    tune_garbage_collector()  # the same process set-up as `recon web`

    uvicorn.run(
        bare_app(),  # type: ignore[arg-type]
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        server_header=False,
    )


#: A PAYMENT_RECEIVED body in the shape of docs/decisions.md; {n} and the refs vary per delivery.
BODY_TEMPLATE: Final = (
    '{{"id":"{event_id}","event":"PAYMENT_RECEIVED","createdAt":"2026-11-22T00:48:01.123Z",'
    '"data":{{"transferRef":null,"receiptRef":"{receipt}","accountRef":"{account}",'
    '"endpointRef":"{endpoint}","holdingRef":"{holding}","accountNumber":"{number:010d}",'
    '"bankCode":"000","amount":"{major}.{minor:02d}","currency":"NGN","status":"SUCCESSFUL",'
    '"narration":"bench inbound credit"}}}}'
)


def write_deliveries(path: Path, count: int, secret: str) -> None:
    """Pre-sign `count` deliveries (unique ids, realistic bodies) as wrk's tab-separated input."""
    now = int(time.time())
    run = uuid.uuid4().int
    with path.open("w") as out:
        for n in range(count):
            event_id = str(uuid.UUID(int=(run + n) % 2**128))
            body = BODY_TEMPLATE.format(
                event_id=event_id,
                receipt=uuid.UUID(int=(run + 7 * n + 1) % 2**128),
                account=uuid.UUID(int=(run + 7 * n + 2) % 2**128),
                endpoint=uuid.UUID(int=(run + 7 * n + 3) % 2**128),
                holding=uuid.UUID(int=(run + 7 * n + 4) % 2**128),
                number=n % 10**10,
                major=n % 100_000,
                minor=n % 100,
            )
            headers = sign_delivery(
                "standard", secret, delivery_id=event_id, timestamp=now, body=body.encode()
            )
            out.write(
                f"{event_id}\t{headers['webhook-timestamp']}\t{headers['webhook-signature']}\t{body}\n"
            )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(argv: list[str], env: dict[str, str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """Start a server process and wait until it answers; stop it at the end."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(
                        f"server did not start:\n{log.read().decode()[-3000:]}"
                    ) from None
                time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def run_wrk(
    name: str, port: int, data: Path, script: Path, args: argparse.Namespace, duration: float
) -> Run:
    env = {**os.environ, "BENCH_DELIVERIES": str(data), "BENCH_THREADS": str(args.threads)}
    output = subprocess.run(
        [
            "wrk",
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{duration:g}s",
            "--latency",
            "--timeout",
            "10s",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}{PATH}",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return Run(
        name=name,
        requests=int(_find(r"(\d+) requests in", output)),
        rate=float(_find(r"Requests/sec:\s+([\d.]+)", output)),
        p50_ms=_latency_ms(_find(r"^\s+50%\s+(\S+)", output)),
        p99_ms=_latency_ms(_find(r"^\s+99%\s+(\S+)", output)),
        non_2xx=int(_find(r"Non-2xx or 3xx responses: (\d+)", output, "0")),
        errors=_find(r"Socket errors: (.*)", output, "none"),
    )


def _find(pattern: str, text: str, default: str | None = None) -> str:
    match = re.search(pattern, text, re.MULTILINE)
    if match is None:
        if default is None:
            raise SystemExit(f"unexpected wrk output:\n{text}")
        return default
    return match.group(1)


def _latency_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def recon_env(database_url: str, secret: str, state_dir: Path) -> dict[str, str]:
    from cryptography.fernet import Fernet

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RECON_") and k not in ("DATABASE_URL", "REDIS_URL")
    }
    return {
        **env,
        "DATABASE_URL": database_url,
        "RECON_STATE_DIR": str(state_dir),
        "RECON_GATEWAY_API_KEY": "ak_test_bench",
        "RECON_COMPANY_API_KEY": "ck_test_bench",
        "RECON_SECRET_KEY": Fernet.generate_key().decode(),
        "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
        "RECON_WEBHOOK_SECRETS": secret,
        "RECON_LOG_FORMAT": "json",
        "RECON_LOG_LEVEL": "warning",
    }


def count_deliveries(database_url: str) -> int:
    from sqlalchemy import func, select

    from foundation.settings import normalise_database_url
    from reconciliation.store.db import make_engine
    from reconciliation.store.models import Delivery

    engine = make_engine(normalise_database_url(database_url))
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Delivery)).scalar_one())
    finally:
        engine.dispose()


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A throwaway migrated database on the PostgreSQL server of `admin_url`."""
    from sqlalchemy import text

    from foundation.settings import normalise_database_url
    from migrations import runner as migrate
    from reconciliation.store.db import make_engine

    admin = make_engine(normalise_database_url(admin_url), isolation_level="AUTOCOMMIT")
    name = f"recon_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = normalise_database_url(admin_url).rpartition("/")[0] + f"/{name}"
    try:
        migrate.upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def start_recon(
    stack: ExitStack, name: str, database_url: str, secret: str, work: Path
) -> tuple[str, int, str | None]:
    port = free_port()
    env = recon_env(database_url, secret, work / f"state-{name}")
    argv = [
        sys.executable,
        "-m",
        "recon",
        "web",
        "--no-register",
        "--no-workers",
        "--port",
        str(port),
    ]
    stack.enter_context(server(argv, env, port))
    return name, port, database_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up per server")
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure the servers in turn this many times"
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
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    secret = new_secret("standard")
    with tempfile.TemporaryDirectory(prefix="recon-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        script = work / "deliveries.lua"
        script.write_text(LUA)
        warmup, data = work / "warmup.tsv", work / "deliveries.tsv"
        write_deliveries(warmup, 20_000, secret)

        port = free_port()
        bare_argv = [sys.executable, __file__, "--serve-bare", str(port)]
        stack.enter_context(server(bare_argv, dict(os.environ), port))
        servers: list[tuple[str, int, str | None]] = [("bare 204", port, None)]
        if not args.skip_postgres:
            url = stack.enter_context(postgres_database(postgres_admin_url()))
            servers.append(start_recon(stack, "recon postgres", url, secret, work))
        if not args.skip_sqlite:
            from migrations import runner as migrate

            url = f"sqlite:///{work / 'bench.db'}"
            migrate.upgrade(url)
            servers.append(start_recon(stack, "recon sqlite", url, secret, work))
        for name, port, _ in servers:
            run_wrk(name, port, warmup, script, args, args.warmup)

        rounds: list[list[Run]] = []
        for _ in range(args.rounds):
            measured = []
            for name, port, url in servers:
                # Fresh deliveries signed just now for every run: a repeat would be a (cheaper)
                # duplicate, and a signature older than the tolerance would be refused.
                write_deliveries(data, args.deliveries, secret)
                before = count_deliveries(url) if url else 0
                run = run_wrk(name, port, data, script, args, args.duration)
                if url:
                    time.sleep(0.5)  # let the last in-flight commits land before counting
                    run = Run(**{**run.__dict__, "stored": count_deliveries(url) - before})
                measured.append(run)
            rounds.append(measured)
    report(rounds, args)


def postgres_admin_url() -> str:
    """Where to create the throwaway benchmark database."""
    database_url = os.environ.get("DATABASE_URL", "")
    return (
        os.environ.get("RECON_BENCH_POSTGRES_URL")
        or (database_url if database_url.startswith("postgres") else "")
        or DEFAULT_POSTGRES
    )


def report(rounds: list[list[Run]], args: argparse.Namespace) -> None:
    """Per round, every server against the bare rate of the same round; then the medians."""
    print(
        f"\nwrk -t{args.threads} -c{args.connections} -d{args.duration:g}s, one uvicorn process "
        f"per server, {os.cpu_count()} CPUs, {len(rounds)} round(s)\n"
    )
    print(
        f"{'server':<16}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'ratio':>8}{'non-2xx':>9}  stored"
    )
    ratios: dict[str, list[float]] = {}
    for number, runs in enumerate(rounds, start=1):
        bare = runs[0].rate
        for run in runs:
            ratio = run.rate / bare
            ratios.setdefault(run.name, []).append(ratio)
            stored = "-" if run.stored is None else str(run.stored)
            print(
                f"{run.name:<16}{run.rate:>10.0f}{run.p50_ms:>9.2f}{run.p99_ms:>9.2f}"
                f"{ratio:>8.2f}{run.non_2xx:>9}  {stored}   (round {number})"
            )
            if run.stored is not None and run.requests > args.deliveries:
                print(
                    f"  note: {run.requests} requests > {args.deliveries} pre-signed: repeats were duplicates"
                )
            if run.errors != "none":
                print(f"  socket errors: {run.errors}")
            if run.stored is not None and run.stored < run.requests - run.non_2xx:
                print("  WARNING: fewer rows stored than deliveries acknowledged")
    print()
    for name, values in ratios.items():
        if name != rounds[0][0].name:
            print(
                f"{name}: median ratio to bare {statistics.median(values):.2f} over {len(values)} round(s)"
            )


if __name__ == "__main__":
    main()
