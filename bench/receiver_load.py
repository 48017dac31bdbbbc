"""The receiver bench's load and servers: pre-signed deliveries, the wrk script that replays
them and what wrk reports; the servers, started and read.

With `acks` set, wrk also records which deliveries each server acknowledged and with what
outcome (the two-process run checks them against the store); the request then carries its
delivery id as X-Request-Id, which the receiver echoes.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx
from harness import recon_env

from recon.demo.processes import ProcessGroup, free_port, recon_argv, wait_until_ready
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


@dataclass(frozen=True)
class Load:
    """How hard wrk drives a server."""

    threads: int
    connections: int
    duration: float


def start_wrk(
    port: int, data: Path, script: Path, load: Load, acks: Path | None = None
) -> subprocess.Popen[str]:
    """wrk against the receiver path of `port`, running; `finish_wrk` reads its report."""
    env = {**os.environ, "BENCH_DELIVERIES": str(data), "BENCH_THREADS": str(load.threads)}
    env.pop("BENCH_ACKS", None)
    if acks is not None:
        env["BENCH_ACKS"] = str(acks)
    argv = ["wrk", f"-t{load.threads}", f"-c{load.connections}", f"-d{load.duration:g}s"]
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


def run_wrk(name: str, port: int, data: Path, script: Path, load: Load) -> Run:
    return finish_wrk(name, start_wrk(port, data, script, load))


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


def start_recon(
    group: ProcessGroup, name: str, url: str, secret: str, work: Path, parser: str = "h11"
) -> Server:
    """`recon web` on `url`: no registration, no workers (the receiver alone), heads parsed by
    `parser` (RECON_WEB_HTTP_PARSER)."""
    state = work / f"state-{name.replace(' ', '-')}"
    env = recon_env(url, state, RECON_WEBHOOK_SECRETS=secret, RECON_WEB_HTTP_PARSER=parser)
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


def commits(target: Server) -> int:
    """The receiver's commits so far: its batch-size histogram's count on /metrics.

    One batch is one transaction (on PostgreSQL one autocommitted INSERT); PostgreSQL's own
    count (pg_stat_database) would also do, but a busy backend publishes it only after ten
    idle seconds, which would lengthen every run.
    """
    text = httpx.get(f"http://127.0.0.1:{target.port}/metrics", timeout=10).text
    match = re.search(r"^recon_webhook_commit_batch_size_count (\S+)$", text, re.MULTILINE)
    return int(float(match.group(1))) if match else 0
