"""Benchmark: `recon rebuild` against its own floor, over the same store, same run.

    .venv/bin/python bench/rebuild.py --only postgres --size 100000 --rounds 3

The store is bench/reconcile.py's, except that every notification comes from a delivery whose
bytes are in the inbox (the `recon` payload shape), which a rebuild reads again. It is loaded
once; each round runs on a fresh copy of it, each step in a fresh interpreter: a full pass from
scratch, then a dry-run rebuild (facts copied into the scratch, bodies read again, a pass
there, digests compared), then the two other parts of the rebuild's floor:

- reading every stored body once: a plain SELECT of the bodies the rebuild reads, each parsed
  as the payload reader parses it (msgspec's JSON, decimals exact), in one process;
- copying the facts: one INSERT .. SELECT per fact table the rebuild copies
  (`reconciliation.rebuild.facts.WHOLE`, delivery bodies left empty as the rebuild leaves
  them) into bare UNLOGGED tables of a scratch schema (an attached file on SQLite).

The floor is what no rebuild can do without: full pass + bodies + facts. It prints each
round's figures (times, peak RSS, the rebuild's phases and CPU seconds, whether the rebuilt
state equals the live one: it must), then the ratio rebuild / floor (the goal: at most
`FLOOR_GOAL`) and rebuild / full pass, min / median / max over `--rounds`. `--workers N` sets
the rebuild's reading processes (0: its own process). Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from harness import database, in_child, quiet_logs, spread
from sqlalchemy import Engine
from streams import Row, Streams, generate, store_tables, write


def body(note: Row) -> bytes:
    """The delivery a notification row came from, in the `recon` shape (amounts major units)."""
    amount, at = note["amount_minor"], note["occurred_at"]
    data = {
        key: str(note[f"{key[:-3]}_ref"]) if note[f"{key[:-3]}_ref"] else None
        for key in ("transferRef", "receiptRef", "accountRef", "endpointRef", "holdingRef")
    }
    data |= {"amount": f"{amount // 100}.{amount % 100:02d}", "currency": note["currency"]}
    data["status"] = note["claimed_status"]
    if note["account_number"] is not None:
        data["accountNumber"] = note["account_number"]
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    whole = {"id": note["event_id"], "event": note["event_type"], "createdAt": stamp, "data": data}
    return json.dumps(whole, separators=(",", ":")).encode()


#: The payload shape every generated delivery is written in.
RECON_SHAPE: Final = {"payload_shape": "recon"}


def inbox(streams: Streams) -> list[tuple[str, Any]]:
    """Deliveries, then their notifications, numbered alike (the generator runs twice)."""

    def deliveries() -> Iterator[Row]:
        for note in streams.notifications():
            raw, at = body(note), note["occurred_at"]
            yield {
                "id": note["id"], "delivery_id": note["event_id"],
                "body_sha256": hashlib.sha256(raw).hexdigest(), "body": raw, "headers": "{}",
                "scheme": "standard", "event_type": note["event_type"], "received_at": at,
                "state": "processed", "attempts": 1, "processed_at": at, "original": True,
            }  # fmt: skip

    def notifications() -> Iterator[Row]:
        for note in streams.notifications():
            yield note | {"delivery_pk": note["id"], "body_id": note["event_id"]} | RECON_SHAPE

    return [("deliveries", deliveries()), ("notifications", notifications())]


#: The issue's goal: a rebuild takes at most this many times its floor.
FLOOR_GOAL: Final = 1.5
#: Bodies fetched per round trip by the floor's plain read (the rebuild's own batch).
READ_BATCH: Final = 5_000
#: Where the floor's copy of the facts goes (PostgreSQL schema, or SQLite attached file).
FLOOR_SCRATCH: Final = "bench_floor"


def read_bodies(engine: Engine) -> dict[str, Any]:
    """Every body the rebuild reads again, selected plainly and parsed once; the seconds."""
    from decimal import Decimal

    import msgspec
    from sqlalchemy import text

    parse = msgspec.json.Decoder(float_hook=Decimal).decode
    started, bodies, size = time.perf_counter(), 0, 0
    query = text(
        "SELECT body FROM deliveries WHERE attempts > 0 AND original IS NOT FALSE ORDER BY id"
    )
    with engine.connect() as connection:
        result = connection.execute(
            query.execution_options(stream_results=True, yield_per=READ_BATCH)
        )
        for rows in result.partitions():
            for (raw,) in rows:
                parse(raw)
                bodies += 1
                size += len(raw)
    return {"seconds": time.perf_counter() - started, "bodies": bodies, "body_mb": size / 2**20}


def copy_facts_plainly(engine: Engine, url: str) -> dict[str, Any]:
    """The rebuild's fact tables copied whole into bare tables of a scratch; the seconds of the
    copies alone (making and dropping the scratch are not counted)."""
    from reconciliation.rebuild.facts import LEFT_EMPTY, WHOLE
    from reconciliation.store.models import Base

    sqlite = engine.dialect.name == "sqlite"
    scratch_file = Path(f"{url.removeprefix('sqlite:///')}.floor") if sqlite else None
    rows: dict[str, int] = {}
    with engine.connect() as connection:
        if scratch_file is not None:
            connection.exec_driver_sql(
                f"ATTACH DATABASE ? AS {FLOOR_SCRATCH}", (str(scratch_file),)
            )
            connection.exec_driver_sql(f"PRAGMA {FLOOR_SCRATCH}.synchronous=OFF")
        else:
            connection.exec_driver_sql(f"CREATE SCHEMA {FLOOR_SCRATCH}")
        for name in WHOLE:
            if scratch_file is not None:
                bare = f"CREATE TABLE {FLOOR_SCRATCH}.{name} AS SELECT * FROM {name} WHERE 0"
            else:
                bare = f"CREATE UNLOGGED TABLE {FLOOR_SCRATCH}.{name} (LIKE {name})"
            connection.exec_driver_sql(bare)
        connection.commit()
        started = time.perf_counter()
        for name in WHOLE:
            columns = [c.name for c in Base.metadata.tables[name].columns]
            chosen = ", ".join(
                ("X''" if sqlite else "''::bytea") if (name, c) in LEFT_EMPTY else c
                for c in columns
            )
            copied = connection.exec_driver_sql(
                f"INSERT INTO {FLOOR_SCRATCH}.{name} ({', '.join(columns)}) "
                f"SELECT {chosen} FROM {name}"
            )
            rows[name] = copied.rowcount
        connection.commit()
        seconds = time.perf_counter() - started
        if scratch_file is not None:
            connection.exec_driver_sql(f"DETACH DATABASE {FLOOR_SCRATCH}")
        else:
            connection.exec_driver_sql(f"DROP SCHEMA {FLOOR_SCRATCH} CASCADE")
        connection.commit()
    if scratch_file is not None:
        scratch_file.unlink(missing_ok=True)
    return {"seconds": seconds, "rows": rows}


#: The steps a child runs, each in a fresh interpreter.
STEPS: Final = ("_pass", "_rebuild", "_read_bodies", "_copy_facts")


def child(step: str, url: str, now_text: str, workers: str = "") -> None:
    """One step in a fresh interpreter: its figures, as one JSON line."""
    from reconciliation.policy import ReconcilePolicy
    from reconciliation.rebuild.run import Mode, rebuild
    from reconciliation.reconcile import run_pass
    from reconciliation.store.db import make_engine, make_session_factory
    from upstream.webhooks.payloads import configured_reader

    quiet_logs()
    engine = make_engine(url)
    started = time.perf_counter()
    figures: dict[str, Any] = {}
    if step == "_pass":
        now = datetime.fromisoformat(now_text)
        result = run_pass(make_session_factory(engine), ReconcilePolicy(), now=now, publish=False)
        figures["alerts_opened"] = len(result.alerts.opened)
    elif step == "_rebuild":
        reader, count = configured_reader(), int(workers) if workers else None
        rebuilt = rebuild(engine, ReconcilePolicy(), reader, mode=Mode.DRY_RUN, workers=count)
        assert rebuilt.comparison is not None
        figures["same"] = rebuilt.comparison.same
        figures["digest"] = rebuilt.comparison.live.overall
        figures["differences"] = [d.as_dict() for d in rebuilt.comparison.differences]
        figures["phases"] = {k: round(v, 2) for k, v in rebuilt.seconds.items()}
    elif step == "_read_bodies":
        figures |= read_bodies(engine)
    else:
        figures |= copy_facts_plainly(engine, url)
    figures.setdefault("seconds", time.perf_counter() - started)
    own, readers = (resource.getrusage(r) for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    figures["peak_mb"] = own.ru_maxrss / 1024
    figures["cpu"] = {
        "own": round(own.ru_utime + own.ru_stime, 2),
        "workers": round(readers.ru_utime + readers.ru_stime, 2),
    }
    engine.dispose()
    print(json.dumps(figures, default=str))


@contextmanager
def fresh_copy(url: str) -> Iterator[str]:
    """A copy of the loaded store for one round (every round starts from the same store, before
    any pass); removed afterwards. PostgreSQL: a database made from it as a template."""
    if url.startswith("sqlite"):
        source = Path(url.removeprefix("sqlite:///"))
        target = source.with_name(f"round-{uuid.uuid4().hex[:8]}.db")
        with sqlite3.connect(source) as original, sqlite3.connect(target) as duplicate:
            original.backup(duplicate)  # whatever a write-ahead log still holds too
        original.close()
        duplicate.close()
        try:
            yield f"sqlite:///{target}"
        finally:
            for suffix in ("", "-wal", "-shm", "-journal", ".rebuild", ".floor"):
                Path(f"{target}{suffix}").unlink(missing_ok=True)
        return
    from sqlalchemy import create_engine

    server, _, source_name = url.rpartition("/")
    name = f"{source_name}_r{uuid.uuid4().hex[:6]}"
    admin = create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(
                f'CREATE DATABASE "{name}" TEMPLATE "{source_name}" STRATEGY FILE_COPY'
            )
        yield f"{server}/{name}"
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def one_round(url: str, now: str, workers: int | None) -> dict[str, Any]:
    """A full pass, a dry-run rebuild and the floor's two other parts, on a fresh copy."""
    with fresh_copy(url) as copy:
        full = in_child(__file__, "_pass", copy, now)
        again = in_child(__file__, "_rebuild", copy, now, "" if workers is None else str(workers))
        bodies = in_child(__file__, "_read_bodies", copy, now)
        facts = in_child(__file__, "_copy_facts", copy, now)
    floor = full["seconds"] + bodies["seconds"] + facts["seconds"]
    return {
        "full_pass_seconds": round(full["seconds"], 2),
        "full_pass_peak_rss_mb": round(full["peak_mb"], 1),
        "read_bodies_seconds": round(bodies["seconds"], 2),
        "bodies_read": bodies["bodies"],
        "body_mb": round(bodies["body_mb"], 1),
        "copy_facts_seconds": round(facts["seconds"], 2),
        "facts_copied": facts["rows"],
        "floor_seconds": round(floor, 2),
        "rebuild_seconds": round(again["seconds"], 2),
        "rebuild_phases": again["phases"],
        "rebuild_peak_rss_mb": round(again["peak_mb"], 1),
        "rebuild_cpu_seconds": again["cpu"],
        "ratio_rebuild_to_floor": round(again["seconds"] / floor, 2),
        "ratio_rebuild_to_pass": round(again["seconds"] / full["seconds"], 2),
        "rebuilt_equals_live": again["same"],
        "digest": again["digest"],
        "differences": again["differences"],
    }


def bench(kind: str, size: int, workers: int | None, rounds: int) -> list[dict[str, Any]]:
    with database(kind, "rebuild") as url:
        started = time.perf_counter()
        streams = generate(size)
        tables = store_tables(streams)
        tables[4:5] = inbox(streams)  # the notifications, each with its delivery
        write(url, tables)
        load_seconds = time.perf_counter() - started
        now = (streams.last + timedelta(days=1)).isoformat()
        found = []
        for n in range(1, rounds + 1):
            figures = {"database": kind, "round": n, "records_per_stream": size}
            figures |= {"load_seconds": round(load_seconds, 1), "cpus": os.cpu_count()}
            figures |= one_round(url, now, workers)
            print(json.dumps(figures, indent=2), flush=True)
            found.append(figures)
    return found


def summary(kind: str, size: int, rounds: list[dict[str, Any]]) -> str:
    """The ratios over the rounds, and what the floor is made of."""
    seconds = {
        key: spread([r[key] for r in rounds])
        for key in (
            "rebuild_seconds",
            "floor_seconds",
            "full_pass_seconds",
            "read_bodies_seconds",
            "copy_facts_seconds",
        )
    }
    same = all(r["rebuilt_equals_live"] for r in rounds)
    return (
        f"{kind}: {size:,} per stream; min / median / max over {len(rounds)} round(s)\n"
        f"  rebuild / floor = {spread([r['ratio_rebuild_to_floor'] for r in rounds])}x "
        f"(goal <= {FLOOR_GOAL}x); rebuild / full pass = "
        f"{spread([r['ratio_rebuild_to_pass'] for r in rounds])}x\n"
        f"  rebuild {seconds['rebuild_seconds']} s; floor {seconds['floor_seconds']} s = "
        f"full pass {seconds['full_pass_seconds']} s + reading every body "
        f"{seconds['read_bodies_seconds']} s + copying the facts {seconds['copy_facts_seconds']} s"
        f"\n  rebuilt equals live in every round: {same}"
    )


def main() -> None:
    if sys.argv[1:2] and sys.argv[1] in STEPS:
        child(*sys.argv[1:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000, help="records per stream")
    parser.add_argument("--only", choices=["postgres", "sqlite"])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each on a fresh copy")
    parser.add_argument(
        "--workers", type=int, help="the rebuild's body-reading processes (default: its own)"
    )
    args = parser.parse_args()
    lines = []
    for kind in [args.only] if args.only else ["postgres", "sqlite"]:
        found = bench(kind, args.size, args.workers, args.rounds)
        lines.append(summary(kind, args.size, found))
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
