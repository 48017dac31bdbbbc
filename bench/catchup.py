"""Catch-up benchmark: 1,000,000 postings over 1,000 holdings, from the sandbox into the store.

The embedded workers read the sandbox's ASGI app in this process through the tests' in-process
transport (no network: the store's write path is what is measured), on PostgreSQL and SQLite:
activity requests against the fewest possible (`minimum_requests`), every posting stored
exactly once (count, sum and line-ref checksum per holding), postings per second. A second run
times the store's write path alone: pre-parsed pages committed by one and two writer threads.
Each goal of issue #16 prints as a ratio, under 1.0 meeting it (40,000 postings/s in process
on PostgreSQL, 60,000/s on the write path, requests at most 1.01 x the minimum), min / median
/ max over `--rounds`. The sandbox plays the provider RECON_SANDBOX_VARIANT names
(sandbox/variants.py; `recon` by default).

    python bench/catchup.py --holdings 100 --postings 100000 --only inprocess
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Final

from harness import database, recon_env, spread, wait_until
from sqlalchemy import Engine, func, select

from foundation import Settings, configure_logging, load_settings
from reconciliation.store.db import make_engine
from reconciliation.store.models import ActivityCursor, Holding, Posting
from sandbox.app import create_app
from sandbox.bulk import build_bulk, prerender_activity
from sandbox.config import SandboxConfig
from sandbox.state import SandboxState
from sandbox.variants import VARIANT_VARIABLE, ProviderVariant, parse_variant
from tests.integration.workers.asgi_transport import InProcessASGITransport

#: `--databases` names, lower-cased, to the stores the runs use (a name not here is refused).
DATABASES: Final = {"postgresql": "postgres", "postgres": "postgres", "sqlite": "sqlite"}
ACTIVITY_PATH: Final = "/v1/balances/activity"
#: Postings asked per activity page, as recon asks by default.
PAGE_SIZE: Final = 200
#: How often the run checks whether every posting is stored (it ends the run, nothing more:
#: the rate is taken from the postings' own ingestion times).
POLL_STORED_SECONDS: Final = 1.0
#: The goals of issue #16: postings per second through the in-process transport on PostgreSQL
#: and on the store's write path alone, and activity requests over the minimum.
GOAL_INPROCESS_POSTGRES_RATE: Final = 40_000.0
GOAL_WRITE_PATH_RATE: Final = 60_000.0
GOAL_REQUESTS_RATIO: Final = 1.01

#: holding ref -> [postings, sum of amounts, XOR of line-ref checksums (high 64 bits)]: "every
#: posting stored exactly once" checked without shipping a million refs around.
Summary = dict[str, list[int]]
Figures = dict[str, Any]


def figures(name: str, postings: int, seconds: float, goal_rate: float | None) -> Figures:
    """One run's figures, with its ratio to each goal it is held to (under 1.0 meets it)."""
    rate = postings / seconds if seconds else 0.0
    found: Figures = {"run": name, "postings": postings, "seconds": round(seconds, 2)}
    found |= {"postings_per_second": round(rate)}
    if goal_rate is not None:
        found["ratio_to_goal.rate"] = round(goal_rate / rate if rate else math.inf, 2)
    return found


def minimum_requests(summary: Summary, variant: ProviderVariant) -> int:
    """The fewest requests any reader needs that knows the provider's cap but not the ledger.

    Entries per full page are what recon asks, or the provider's cap when that is lower (above
    a cap that refuses, recon settles on the cap the refusal names; above one that clamps, it
    is served the cap). One request per page with entries, one for an empty holding, and one
    after a full last page when the provider puts a cursor on its last page too.
    """
    size = min(PAGE_SIZE, variant.page_cap)
    total = 0
    for count, _, _ in summary.values():
        ambiguous = count == 0 or (count % size == 0 and variant.last_page_cursor == "last-entry")
        total += math.ceil(count / size) + (1 if ambiguous else 0)
    return total


def counting(app: Any, by_path: Counter[str]) -> Any:
    """The sandbox's ASGI app, counting requests by path on the one event loop thread the
    transport runs it on."""

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        by_path[scope["path"] if scope["type"] == "http" else ""] += 1
        await app(scope, receive, send)

    return counted


def build_world(holdings: int, postings: int, seed: int = 1) -> tuple[SandboxState, Summary]:
    """A sandbox holding `postings` spread over `holdings`, and its ledger's summary.

    Entries are rendered ahead (`prerender_activity`): the sandbox is the provider's stand-in,
    so a page costs it a byte join and what the benchmark measures is the reader and the store.
    """
    state = SandboxState(SandboxConfig(run_background=False, seed=seed))
    build_bulk(state, holdings=holdings, postings=postings, seed=seed)
    prerender_activity(state)
    summary: Summary = {}
    for ref, holding in state.holdings.items():
        xor = total = 0
        for row in holding.rows:
            xor ^= row[2] >> 64
            total += row[4]
        summary[ref] = [len(holding.rows), total, xor]
    return state, summary


def settings_for(workdir: Path, database_url: str) -> Settings:
    """Settings for a pure catch-up: everything but activity polling is left idle."""
    idle = ("POLL_ACTIVITY", "POLL_TRANSFERS", "SNAPSHOT_BALANCES", "DISCOVER_HOLDINGS")
    idle += ("CHECK_SUBSCRIPTION", "RECONCILE", "SWEEP")
    env = recon_env(
        database_url,
        workdir / "state",
        RECON_GATEWAY_URL="http://sandbox.invalid",
        RECON_GATEWAY_RPS="1000000",
        RECON_ACTIVITY_PAGE_SIZE=str(PAGE_SIZE),
    )
    # One read per holding, to its end: no steady-state polls during the measurement.
    return load_settings(env | {f"RECON_{name}_SECONDS": "86400" for name in idle})


def all_stored(engine: Engine, target: int) -> bool:
    """Are `target` postings stored? The cursors' read counts (a thousand rows) are summed
    first, and the postings (up to a million rows, a scan) counted only once that sum says they
    may all be there: it counts a re-read page twice, so it runs ahead of the stored count."""
    with engine.connect() as conn:
        read = conn.scalar(select(func.coalesce(func.sum(ActivityCursor.postings_read), 0)))
        if int(read or 0) < target:
            return False
        return int(conn.scalar(select(func.count()).select_from(Posting)) or 0) >= target


def all_read(engine: Engine) -> bool:
    """Has every holding's read ended (its cursor counts a completed read)?"""
    with engine.connect() as conn:
        unread = select(ActivityCursor.holding_id).where(ActivityCursor.reads_completed == 0)
        return conn.scalar(unread.limit(1)) is None


def verify(engine: Engine, expected: Summary) -> tuple[bool, float]:
    """Exactly once per holding (count, sum, checksum); also the first-to-last stored span."""
    got: dict[str, list[int]] = {}
    with engine.connect() as conn:
        query = select(Holding.holding_ref, Posting.line_ref, Posting.amount_minor)
        rows = conn.execution_options(yield_per=20_000).execute(
            query.join(Holding, Holding.id == Posting.holding_id)
        )
        for ref, line, amount in rows:
            entry = got.setdefault(str(ref), [0, 0, 0])
            entry[0] += 1
            entry[1] += amount
            entry[2] ^= line.int >> 64
        span = select(func.min(Posting.ingested_at), func.max(Posting.ingested_at))
        first, last = conn.execute(span).one()
    same = all(got.get(ref, [0, 0, 0]) == want for ref, want in expected.items())
    same = same and sum(v[0] for v in got.values()) == sum(v[0] for v in expected.values())
    return same, (last - first).total_seconds() if first and last else 0.0


def run_inprocess(args: argparse.Namespace, kind: str, variant: ProviderVariant) -> Figures:
    """The sandbox app in this process behind an ASGI transport; embedded workers."""
    from workers import start_embedded
    from workers.actors import discover_holdings

    state, expected = build_world(args.holdings, args.postings)
    state.config.variant = variant
    # The sandbox's world (millions of objects) lives in this process only because the run is
    # in-process; a worker process never holds it. Moved out of the collector's sight, it no
    # longer makes every full collection the reader's allocations trigger scan it all.
    gc.collect()
    gc.freeze()
    counts: Counter[str] = Counter()
    transport = InProcessASGITransport(counting(create_app(state=state), counts)).start()
    try:
        with tempfile.TemporaryDirectory() as tmp, database(kind, "catchup") as db_url:
            settings = settings_for(Path(tmp), db_url)
            engine = make_engine(settings.store.database_url)
            # No scheduler: only the catch-up runs (discovery sends each new holding's read).
            embedded = start_embedded(
                settings, threads=args.threads, transport=transport, with_scheduler=False
            )
            discover_holdings.send()
            started = time.monotonic()
            try:
                stored = partial(all_stored, engine, args.postings)
                wait_until(stored, 3600, "the catch-up", POLL_STORED_SECONDS)
                seconds = time.monotonic() - started
                # The requests of the catch-up: counted once every holding's read has ended.
                # The first ledger audit is sent only then (reconciliation.ledger_audit
                # .first_audit) and reads every ledger again, which is the audit's cost.
                wait_until(partial(all_read, engine), 600, "the last reads", 0.05)
                catch_up_requests = counts[ACTIVITY_PATH]
            finally:
                embedded.stop()
            exactly_once, span = verify(engine, expected)
            engine.dispose()
    finally:
        transport.close()
    name = f"in-process transport, {kind}, {variant.name}"
    goal = GOAL_INPROCESS_POSTGRES_RATE if kind == "postgres" else None
    found = figures(name, args.postings, span or seconds, goal)
    found["activity_requests"] = asked = catch_up_requests
    found["minimum_requests"] = least = minimum_requests(expected, variant)
    found["ratio_to_goal.requests"] = round(asked / least / GOAL_REQUESTS_RATIO, 4)
    found["stored_exactly_once"] = exactly_once
    found["note"] = f"{args.holdings:,} holdings, {args.threads} worker threads, sandbox included"
    return found


def prebuilt_pages(postings: int) -> list[list[Any]]:
    """`postings` parsed postings of one holding in pages of `PAGE_SIZE`, for the write path."""
    from upstream.wire.balances import Posting as WirePosting
    from upstream.wire.common import ValueUnit

    start = datetime(2026, 1, 1, tzinfo=UTC)
    fixed = {"journal_kind": "transfer_settlement", "posting_side": "credit"}
    fixed |= {"balance_effect": "increase", "ledger_partition": "customer_liability"}
    fixed |= {"ledger_normal_side": "credit_normal", "value_unit": ValueUnit.fiat("NGN")}
    every = []
    for n in range(postings):
        refs = {f"{ref}_ref": uuid.uuid4() for ref in ("receipt", "journal", "line")}
        at = start + timedelta(milliseconds=n)
        every.append(WirePosting(posted_at=at, amount_minor_units=100 + n, **refs, **fixed))
    return [every[first : first + PAGE_SIZE] for first in range(0, postings, PAGE_SIZE)]


def run_write_path(args: argparse.Namespace, kind: str, writers: int) -> Figures:
    """The store's write path alone: pre-parsed pages committed by `writers` threads.

    No sandbox, no HTTP, no parsing: each thread holds one holding's lease and stores pages of
    `PAGE_SIZE` postings with `store_page`, exactly as the reader does after each fetch.
    """
    from reconciliation.postings.activity import acquire_lease, store_page
    from reconciliation.store.db import make_session_factory, transaction
    from upstream.activity import ActivityCursor as WireCursor

    total = min(args.postings, args.write_path_postings)
    per_writer = total // writers
    pages_by_writer = [prebuilt_pages(per_writer) for _ in range(writers)]
    with database(kind, "catchup") as db_url:
        engine = make_engine(db_url)
        sessions = make_session_factory(engine)
        leases = []
        for w in range(writers):
            with transaction(sessions) as session:
                refs = {f"{k}_ref": uuid.uuid4() for k in ("account", "endpoint", "holding")}
                holding = Holding(**refs, currency="NGN")
                session.add(holding)
                session.flush()
                holding_id = holding.id
            lease = acquire_lease(sessions, holding_id, f"bench-writer-{w}", datetime.now(UTC))
            assert lease is not None
            leases.append(lease)

        def write(index: int) -> None:
            with sessions() as session:
                for page in pages_by_writer[index]:
                    last = page[-1]
                    cursor = WireCursor(
                        after_posted_at=last.posted_at.isoformat(),
                        after_receipt_ref=str(last.receipt_ref),
                        after_line_ref=str(last.line_ref),
                        sort_direction="oldest_first",
                    )
                    store_page(session, leases[index], page, cursor, datetime.now(UTC))

        started = time.monotonic()
        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(write, range(writers)))
        seconds = time.monotonic() - started
        with engine.connect() as conn:
            stored = int(conn.scalar(select(func.count()).select_from(Posting)) or 0)
        engine.dispose()
    name = f"store write path only, {kind}, {writers} writer(s)"
    found = figures(name, stored, seconds, GOAL_WRITE_PATH_RATE if kind == "postgres" else None)
    found["stored_exactly_once"] = stored == per_writer * writers
    found["note"] = f"{PAGE_SIZE} postings per page, one transaction per page with its cursor"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--holdings", type=int, default=1_000)
    parser.add_argument("--postings", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=4, help="worker threads")
    parser.add_argument("--only", choices=("inprocess", "writepath"), default=None)
    parser.add_argument("--databases", default="PostgreSQL,SQLite", help="comma-separated")
    parser.add_argument("--write-path-postings", type=int, default=200_000, help="per run")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every run this often")
    args = parser.parse_args()
    configure_logging("console", "warning")
    variant = parse_variant(os.environ.get(VARIANT_VARIABLE, "recon"))
    # Any spelling (`postgres`, `sqlite`): a name the runs do not know is refused, not run as
    # PostgreSQL without its goal, or SQLite under the wrong label.
    kinds = [DATABASES[d.strip().lower()] for d in args.databases.split(",") if d.strip()]
    results: list[Figures] = []
    for _ in range(args.rounds):
        if args.only in (None, "inprocess"):
            results += [run_inprocess(args, kind, variant) for kind in kinds]
            print("\n".join(json.dumps(r) for r in results[-len(kinds) :]), flush=True)
        for kind in kinds if args.only in (None, "writepath") else ():
            results += [run_write_path(args, kind, writers) for writers in (1, 2)]
            print("\n".join(json.dumps(r) for r in results[-2:]), flush=True)
    print("\nover rounds (min / median / max)")
    for name in dict.fromkeys(r["run"] for r in results):
        done = [r for r in results if r["run"] == name]
        shown = {k: spread([r[k] for r in done]) for k in done[0] if k.startswith("ratio")}
        shown["postings/s"] = spread([r["postings_per_second"] for r in done], "{:,.0f}")
        print(f"{name}: rounds {len(done)}; " + "; ".join(f"{k} {v}" for k, v in shown.items()))


if __name__ == "__main__":
    main()
