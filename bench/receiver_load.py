"""The receiver benchmark's load: pre-signed deliveries, the wrk script that replays them, and
what wrk reports.

Every request is a new, validly signed delivery (unique id, realistic body), so the server
must verify and durably commit each one. With `acks` set, wrk also records which deliveries
each server acknowledged and with what outcome (the two-process run checks them against the
store); the request then carries its delivery id as X-Request-Id, which the receiver echoes.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

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

#: A PAYMENT_RECEIVED body in the shape of docs/decisions.md; {n} and the refs vary per delivery.
BODY_TEMPLATE: Final = (
    '{{"id":"{event_id}","event":"PAYMENT_RECEIVED","createdAt":"2026-11-22T00:48:01.123Z",'
    '"data":{{"transferRef":null,"receiptRef":"{receipt}","accountRef":"{account}",'
    '"endpointRef":"{endpoint}","holdingRef":"{holding}","accountNumber":"{number:010d}",'
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


def signed_lines(count: int, secret: str) -> Iterator[str]:
    """`count` deliveries signed now (unique ids, realistic bodies), as wrk's input lines."""
    now = int(time.time())
    run = uuid.uuid4().int
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
        yield f"{event_id}\t{headers['webhook-timestamp']}\t{headers['webhook-signature']}\t{body}\n"


def write_deliveries(path: Path, count: int, secret: str) -> None:
    """Pre-sign `count` deliveries as wrk's tab-separated input."""
    with path.open("w") as out:
        out.writelines(signed_lines(count, secret))


def write_shared_deliveries(first: Path, second: Path, count: int, secret: str) -> None:
    """Two inputs of `count` deliveries each; every SHARED_EVERY-th line is the same in both.

    Both wrk processes start together and send at about the same pace, so a shared delivery
    reaches the two servers at about the same moment: the race the store must settle.
    """
    shared = count // SHARED_EVERY
    lines = signed_lines(2 * (count - shared) + shared, secret)
    with first.open("w") as one, second.open("w") as two:
        for n in range(count):
            if n % SHARED_EVERY == SHARED_EVERY - 1:
                line = next(lines)
                one.write(line)
                two.write(line)
            else:
                one.write(next(lines))
                two.write(next(lines))


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
    return subprocess.Popen(
        [
            "wrk",
            f"-t{load.threads}",
            f"-c{load.connections}",
            f"-d{load.duration:g}s",
            "--latency",
            "--timeout",
            "10s",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}{PATH}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_wrk(name: str, process: subprocess.Popen[str]) -> Run:
    """Wait for wrk and read its report."""
    output, errors = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"wrk failed ({process.returncode}):\n{errors}\n{output}")
    return Run(
        name=name,
        requests=int(_find(r"(\d+) requests in", output)),
        rate=float(_find(r"Requests/sec:\s+([\d.]+)", output)),
        p50_ms=_latency_ms(_find(r"^\s+50%\s+(\S+)", output)),
        p99_ms=_latency_ms(_find(r"^\s+99%\s+(\S+)", output)),
        non_2xx=int(_find(r"Non-2xx or 3xx responses: (\d+)", output, "0")),
        errors=_find(r"Socket errors: (.*)", output, "none"),
    )


def run_wrk(name: str, port: int, data: Path, script: Path, load: Load) -> Run:
    return finish_wrk(name, start_wrk(port, data, script, load))


def read_acks(path: Path) -> dict[str, str]:
    """What one wrk run recorded: delivery id -> first letters of the outcomes it heard."""
    acks: dict[str, str] = {}
    with path.open() as lines:
        for line in lines:
            delivery_id, _, outcomes = line.rstrip("\n").partition("\t")
            acks[delivery_id] = outcomes
    return acks


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
