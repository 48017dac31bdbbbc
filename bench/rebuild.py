"""Benchmark: `recon rebuild` against a full pass over the same store, same run.

    .venv/bin/python bench/rebuild.py --only postgres --size 100000 --rounds 3

The store is bench/reconcile.py's, except that every notification comes from a delivery whose
bytes are in the inbox (the `recon` payload shape), which a rebuild reads again. It is loaded
once; each round runs on a fresh copy of it, each step in a fresh interpreter: a full pass from
scratch (bench/reconcile.py's), then a dry-run rebuild (facts copied into the scratch, bodies
read again, a pass there, digests compared). It prints each round's figures (times, peak RSS,
the rebuild's phases and CPU seconds, whether the rebuilt state equals the live one: it must),
then the ratio rebuild / full pass, min / median / max over `--rounds`. PostgreSQL only (on
BENCH_POSTGRES_URL's server). Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from harness import in_child, postgres_database, quiet_logs, spread
from streams import Row, Streams, generate, recon_delivery, store_tables, write

#: The payload shape every generated delivery is written in.
RECON_SHAPE: Final = {"payload_shape": "recon"}


def inbox(streams: Streams) -> list[tuple[str, Any]]:
    """Deliveries in the `recon` shape (amounts in major units), then their notifications,
    numbered alike (the generator runs twice)."""

    def deliveries() -> Iterator[Row]:
        for note in streams.notifications():
            amount, at, refs = note["amount_minor"], note["occurred_at"], {}
            for key in ("transferRef", "receiptRef", "accountRef", "endpointRef", "holdingRef"):
                refs[key] = str(note[f"{key[:-3]}_ref"]) if note[f"{key[:-3]}_ref"] else None
            data = refs | {"amount": f"{amount // 100}.{amount % 100:02d}"}
            data |= {"currency": note["currency"], "status": note["claimed_status"]}
            if note["account_number"] is not None:
                data["accountNumber"] = note["account_number"]
            yield recon_delivery(
                note["event_id"], note["event_type"], at, data, id=note["id"], headers="{}",
                received_at=at, state="processed", attempts=1, processed_at=at,
            )  # fmt: skip

    def notifications() -> Iterator[Row]:
        for note in streams.notifications():
            yield note | {"delivery_pk": note["id"], "body_id": note["event_id"]} | RECON_SHAPE

    return [("deliveries", deliveries()), ("notifications", notifications())]


def child(url: str) -> None:
    """A dry-run rebuild in a fresh interpreter (its peak RSS its own): its figures, as JSON."""
    from reconciliation import ReconcilePolicy
    from reconciliation.rebuild.run import Mode, rebuild
    from reconciliation.store.db import make_engine
    from upstream.webhooks.payloads import configured_reader

    quiet_logs()
    engine = make_engine(url)
    started = time.perf_counter()
    rebuilt = rebuild(engine, ReconcilePolicy(), configured_reader(), mode=Mode.DRY_RUN)
    seconds = time.perf_counter() - started
    assert rebuilt.comparison is not None
    own, readers = (resource.getrusage(r) for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    figures = {
        "seconds": seconds,
        "same": rebuilt.comparison.same,
        "differences": [d.as_dict() for d in rebuilt.comparison.differences],
        "phases": {k: round(v, 2) for k, v in rebuilt.seconds.items()},
        "peak_mb": own.ru_maxrss / 1024,
        "cpu": {
            "own": round(own.ru_utime + own.ru_stime, 2),
            "workers": round(readers.ru_utime + readers.ru_stime, 2),
        },
    }
    engine.dispose()
    print(json.dumps(figures, default=str))


@contextmanager
def fresh_copy(url: str) -> Iterator[str]:
    """A copy of the loaded store for one round (every round starts from the same store, before
    any pass), a database made from it as a template; dropped afterwards."""
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


def one_round(url: str, now: str) -> dict[str, Any]:
    """A full pass (bench/reconcile.py's child) and a dry-run rebuild, on a fresh copy."""
    with fresh_copy(url) as copy:
        full = in_child(str(Path(__file__).with_name("reconcile.py")), "_pass", copy, now)
        again = in_child(__file__, "_rebuild", copy)
    return {
        "full_pass_seconds": round(full["seconds"], 2),
        "full_pass_peak_rss_mb": round(full["peak_mb"], 1),
        "rebuild_seconds": round(again["seconds"], 2),
        "rebuild_phases": again["phases"],
        "rebuild_peak_rss_mb": round(again["peak_mb"], 1),
        "rebuild_cpu_seconds": again["cpu"],
        "ratio_rebuild_to_pass": round(again["seconds"] / full["seconds"], 2),
        "rebuilt_equals_live": again["same"],
        "differences": again["differences"],
    }


def bench(size: int, rounds: int) -> list[dict[str, Any]]:
    with postgres_database("rebuild") as url:
        started = time.perf_counter()
        streams = generate(size)
        tables = store_tables(streams)
        tables[4:5] = inbox(streams)  # the notifications, each with its delivery
        write(url, tables)
        load_seconds = time.perf_counter() - started
        now = (streams.last + timedelta(days=1)).isoformat()
        found = []
        for n in range(1, rounds + 1):
            figures = {"database": "postgres", "round": n, "records_per_stream": size}
            figures |= {"load_seconds": round(load_seconds, 1), "cpus": os.cpu_count()}
            figures |= one_round(url, now)
            print(json.dumps(figures, indent=2), flush=True)
            found.append(figures)
    return found


def summary(size: int, rounds: list[dict[str, Any]]) -> str:
    """The ratio over the rounds, and the seconds it is made of."""

    def over(key: str) -> str:
        return spread([r[key] for r in rounds])

    same = all(r["rebuilt_equals_live"] for r in rounds)
    return (
        f"postgres: {size:,} per stream; min / median / max over {len(rounds)} round(s)\n"
        f"  rebuild / full pass = {over('ratio_rebuild_to_pass')}x: rebuild "
        f"{over('rebuild_seconds')} s, full pass {over('full_pass_seconds')} s\n"
        f"  rebuilt equals live in every round: {same}"
    )


def main() -> None:
    if sys.argv[1:2] == ["_rebuild"]:
        child(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000, help="records per stream")
    parser.add_argument("--only", choices=["postgres"], help="the only database it runs on")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each on a fresh copy")
    args = parser.parse_args()
    print("\n" + summary(args.size, bench(args.size, args.rounds)))


if __name__ == "__main__":
    main()
