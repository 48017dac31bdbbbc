"""Benchmark: a full reconciliation pass over 1M postings + 1M transfers + 1M notifications.

    .venv/bin/python bench/reconcile.py --only postgres --size 200000 --rounds 3

For each database (PostgreSQL on BENCH_POSTGRES_URL's server, then SQLite) it writes
bench/streams.py's streams (--size per stream) into a fresh store, then per round times: a
bare SQL hash join of the pass's keys into a new table (the floor), on PostgreSQL the same
rows written into a copy of `matches` with its indexes (what writing them alone costs), a full
pass from scratch in a fresh interpreter (its peak RSS its own), and, after 10,000 new records,
the incremental pass, twice: in a fresh interpreter (every statement compiled for the first
time), and warm, in one that has just run a pass with nothing new, as a running worker has
(its ratio to the 0.15 s goal printed). Then it empties what the passes wrote. It prints min /
median / max over the rounds of the pass's ratio to the bare join. (A statement's plan:
tests/integration/retention/plan_capture.py explains every statement a pass sends.)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

from harness import database, in_child, quiet_logs, spread
from sqlalchemy import Engine, text
from streams import HOLDINGS, generate, new_records, store_tables, write

from reconciliation.store.db import make_engine

#: Records added before each incremental pass (2,500 settled transfers: 4 records each).
INCREMENTAL_TRANSFERS: Final = 2_500
#: Issue #30's goal for an incremental pass after INCREMENTAL_TRANSFERS' records, in seconds.
INCREMENTAL_GOAL: Final = 0.15
#: Tables a pass writes (and nothing else does in the bench): emptied between rounds so every
#: round's full pass starts from the same store as the first.
PASS_TABLES: Final = ("matches", "match_backlog", "alerts", "balance_checks", "watermarks", "leases")  # fmt: skip
#: The bare join: every notification to its posting and transfer by the keys a pass uses.
JOIN: Final = (
    "FROM notifications n LEFT JOIN postings p ON p.receipt_ref = n.receipt_ref "
    "LEFT JOIN transfers t ON t.transfer_ref = n.transfer_ref"
)


def timed(engine: Engine, *statements: str) -> float:
    """Seconds for `statements` in one transaction (hash joins only, on PostgreSQL)."""
    started = time.perf_counter()
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL enable_nestloop = off"))  # a hash join, as advertised
        for statement in statements:
            conn.execute(text(statement))
    return time.perf_counter() - started


def bare_floors(engine: Engine) -> tuple[float, float | None]:
    """The floor, the join's rows into a new table; and on PostgreSQL, the same rows INSERTed
    into a table shaped like `matches`, with its indexes: what writing the match rows alone
    costs, the part of a pass no query plan saves."""
    chosen = "n.id AS notification_id, p.id AS posting_id, t.id AS transfer_id"
    join = timed(engine, f"CREATE TABLE bench_join AS SELECT {chosen} {JOIN}")
    timed(engine, "DROP TABLE bench_join")
    if engine.dialect.name != "postgresql":
        return join, None
    timed(engine, "CREATE TABLE bench_write (LIKE matches INCLUDING ALL)")
    columns = "rule, posting_id, transfer_id, notification_id, matched_at, matched_by"
    chosen = "'bench', p.id, t.id, n.id, now(), 'bench'"
    written = timed(engine, f"INSERT INTO bench_write ({columns}) SELECT {chosen} {JOIN}")
    timed(engine, "DROP TABLE bench_write")
    return join, written


def reset_store(engine: Engine) -> None:
    """Undo what passes wrote, so the next round's full pass starts from scratch again."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(PASS_TABLES)} RESTART IDENTITY"))
        else:
            for table in PASS_TABLES:
                conn.execute(text(f"DELETE FROM {table}"))
        undo = "SET match_status = 'unmatched' WHERE match_status = 'exception'"
        for table in ("postings", "notifications", "transfers"):
            conn.execute(text(f"UPDATE {table} {undo}"))
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))


def child_pass(url: str, now_text: str, *warm: str) -> None:
    """In a fresh interpreter: one pass, its figures printed as JSON.

    With `warm` (the timed pass's time, the stream size, the new records' first number and the
    number of holdings):
    first an untimed pass with nothing new, as a running worker has always just done one (its
    statements compiled, its connections open), then the new records, then the timed pass."""
    from reconciliation import ReconcilePolicy, run_pass
    from reconciliation.store.db import make_session_factory

    quiet_logs()
    engine = make_engine(url)
    factory = make_session_factory(engine)
    now = datetime.fromisoformat(now_text)
    if warm:
        run_pass(factory, ReconcilePolicy(), now=now, publish=False)
        later, size, first, holdings = datetime.fromisoformat(warm[0]), *map(int, warm[1:])
        extra = generate(size, first, INCREMENTAL_TRANSFERS, holdings=holdings)
        write(url, new_records(extra), numbered=False)
        now = later
    started = time.perf_counter()
    result = run_pass(factory, ReconcilePolicy(), now=now, publish=False)
    seconds = time.perf_counter() - started
    phases = result.seconds | {f"matching.{k}": v for k, v in result.matching_seconds.items()}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "phases": phases}))


def bench(kind: str, size: int, rounds: int, holdings: int, waiting: bool) -> dict[str, Any]:
    done = []
    with database(kind, "reconcile") as url:
        started = time.perf_counter()
        full = generate(size, holdings=holdings)
        write(url, store_tables(full, waiting=waiting))
        load_seconds = time.perf_counter() - started
        now = full.last + timedelta(days=1)
        engine = make_engine(url)
        for n in range(rounds):
            if n:
                reset_store(engine)
            join, written = bare_floors(engine)
            first = in_child(__file__, "_pass", url, now.isoformat())
            offset = size + 2 * n * INCREMENTAL_TRANSFERS
            extra = generate(size, offset, INCREMENTAL_TRANSFERS, holdings=holdings)
            write(url, new_records(extra), numbered=False)
            later = (now + timedelta(seconds=30)).isoformat()
            second = in_child(__file__, "_pass", url, later)
            then = [(now + timedelta(seconds=s)).isoformat() for s in (60, 90)]
            offset += INCREMENTAL_TRANSFERS
            warm = in_child(__file__, "_pass", url, *then, str(size), str(offset), str(holdings))
            done.append({"join": join, "write": written, "first": first, "second": second})
            done[-1]["warm"] = warm
        engine.dispose()
    return figures(kind, size, load_seconds, done)


def figures(kind: str, size: int, load_seconds: float, done: list[Any]) -> dict[str, Any]:
    """Min / median / max over the rounds of what varies; the last round's details."""

    def over(pick: Callable[[Any], float], form: str = "{:.2f}") -> str:
        return spread([pick(r) for r in done], form)

    last = done[-1]
    found: dict[str, Any] = {
        "database": kind,
        "records_per_stream": size,
        "rounds": len(done),
        "load_seconds": round(load_seconds, 1),
        "ratio_pass_to_bare_join": over(lambda r: r["first"]["seconds"] / r["join"]),
        "bare_hash_join_seconds": over(lambda r: r["join"]),
        "full_pass_seconds": over(lambda r: r["first"]["seconds"]),
        "incremental_pass_seconds": over(lambda r: r["second"]["seconds"], "{:.3f}"),
        "incremental_warm_pass_seconds": over(lambda r: r["warm"]["seconds"], "{:.3f}"),
        "ratio_incremental_warm_to_goal": over(lambda r: r["warm"]["seconds"] / INCREMENTAL_GOAL),
        "records_per_minute": int(
            3 * size / statistics.median(r["first"]["seconds"] for r in done) * 60
        ),
    }
    for name, step in (("full_pass", "first"), ("incremental", "second"), ("warm", "warm")):
        found[f"{name}_peak_rss_mb"] = round(max(r[step]["peak_mb"] for r in done), 1)
        found[f"{name}_phases"] = {k: round(v, 3) for k, v in last[step]["phases"].items()}
    if kind == "postgres":
        found["bare_join_and_write_seconds"] = over(lambda r: r["write"])
        found["ratio_write_to_bare_join"] = over(lambda r: r["write"] / r["join"])
    return found


def main() -> None:
    if sys.argv[1:2] == ["_pass"]:
        child_pass(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000, help="records per stream")
    parser.add_argument("--only", choices=["postgres", "sqlite"])
    parser.add_argument("--rounds", type=int, default=1, help="join + pass rounds per database")
    parser.add_argument("--holdings", type=int, default=HOLDINGS, help="holdings the streams use")
    parser.add_argument(
        "--waiting", action="store_true", help="every snapshot waits for its poller (a fleet's)"
    )
    args = parser.parse_args()
    for kind in [args.only] if args.only else ["postgres", "sqlite"]:
        found = bench(kind, args.size, max(1, args.rounds), args.holdings, args.waiting)
        print(json.dumps(found | {"holdings": args.holdings, "waiting": args.waiting}, indent=2))


if __name__ == "__main__":
    main()
