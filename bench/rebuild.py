"""Benchmark: `recon rebuild` against a full reconciliation pass, over the same store, same run.

    .venv/bin/python bench/rebuild.py                      # PostgreSQL, then SQLite, 1M each
    .venv/bin/python bench/rebuild.py --only postgres --size 100000

The store is `bench/reconcile.py`'s (`reconcile_data`: postings, transfers, a balance snapshot
per holding), except that every notification comes from a delivery whose bytes are in the inbox
(the `recon` payload shape), as in production: a rebuild reads those bytes again. Then, each in a
fresh interpreter (so each peak RSS is its own):

1. a full pass from scratch (the live derived state);
2. a rebuild in dry-run mode: facts copied into the scratch, notifications read again from the
   bytes, a full pass there, digests and comparison, scratch dropped.

It prints both times, the ratio rebuild / pass (the target is at most 2), both peak RSS figures,
the rebuild's phases and CPU seconds (its own, and its body-reading worker processes'), and
whether the rebuilt state equals the live one (it must); then one line per database with the
ratio, the line to quote. `--workers N` sets the rebuild's reading processes (default: one per
CPU over a large inbox; 0 reads every body in the rebuild's own process).

The machine should be otherwise idle: both steps use every core (the pass one, the rebuild
all), so other work on the machine moves the ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reconcile_data import (  # noqa: E402 - found through the path set just above
    Shape,
    generate,
)
from reconcile_load import (  # noqa: E402 - found through the path set just above
    load_postgres,
    load_sqlite_url,
    load_with_snapshots,
)

DELIVERY_COLUMNS = (
    "id, delivery_id, body_sha256, body, headers, scheme, event_type, received_at, state, "
    "attempts, processed_at, original"
)
NOTE_COLUMNS = (
    "id, delivery_pk, event_id, body_id, payload_shape, event_type, transfer_ref, receipt_ref, "
    "account_ref, endpoint_ref, holding_ref, account_number, amount_minor, currency, "
    "claimed_status, occurred_at, created_at, match_status"
)


def _body(row: tuple[Any, ...]) -> bytes:
    """The delivery a notification row came from, in the `recon` shape (amounts major units)."""
    (
        _,
        event,
        kind,
        transfer,
        receipt,
        account,
        endpoint,
        holding,
        number,
        amount,
        currency,
        status,
        at,
        _created,
        _status,
    ) = row
    data = {
        "transferRef": str(transfer) if transfer else None,
        "receiptRef": str(receipt) if receipt else None,
        "accountRef": str(account),
        "endpointRef": str(endpoint),
        "holdingRef": str(holding),
        "amount": f"{amount // 100}.{amount % 100:02d}",
        "currency": currency,
        "status": status,
    }
    if number is not None:
        data["accountNumber"] = number
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    body = {"id": event, "event": kind, "createdAt": stamp, "data": data}
    return json.dumps(body, separators=(",", ":")).encode()


def inbox_rows(
    notes: Iterator[tuple[Any, ...]],
) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """(delivery, notification) per generated notification, numbered alike."""
    for row in notes:
        nid, event, kind, transfer, receipt, account, endpoint, holding = row[:8]
        number, amount, currency, status, at = row[8:13]
        body = _body(row)
        delivery = (
            nid,
            event,
            hashlib.sha256(body).hexdigest(),
            body,
            "{}",
            "standard",
            kind,
            at,
            "processed",
            1,
            at,
            True,
        )
        note = (
            nid,
            nid,
            event,
            event,
            "recon",
            kind,
            transfer,
            receipt,
            account,
            endpoint,
            holding,
            number,
            amount,
            currency,
            status,
            at,
            at,
            "unmatched",
        )
        yield delivery, note


def load_inbox(kind: str, url: str, notes: Any) -> None:
    """Deliveries, then their notifications: the generator is deterministic, so it runs twice."""
    if kind == "postgres":
        import psycopg

        plain = url.replace("postgresql+psycopg", "postgresql")
        with psycopg.connect(plain) as conn, conn.cursor() as cur:
            for table, columns, which in (
                ("deliveries", DELIVERY_COLUMNS, 0),
                ("notifications", NOTE_COLUMNS, 1),
            ):
                with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for pair in inbox_rows(notes()):
                        copy.write_row(pair[which])
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )
            conn.commit()
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE deliveries, notifications")
        return
    import sqlite3

    from reconcile_load import sqlite_value

    lite = sqlite3.connect(url.removeprefix("sqlite:///"))
    lite.execute("PRAGMA synchronous=OFF")
    for table, columns, which in (
        ("deliveries", DELIVERY_COLUMNS, 0),
        ("notifications", NOTE_COLUMNS, 1),
    ):
        marks = ", ".join("?" for _ in columns.split(","))
        lite.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})",
            (tuple(sqlite_value(v) for v in pair[which]) for pair in inbox_rows(notes())),
        )
    lite.commit()
    lite.execute("ANALYZE")
    lite.close()


def in_child(*args: str) -> dict[str, Any]:
    """Run one measured step in a fresh interpreter; its last stdout line is JSON."""
    out = subprocess.run(
        [sys.executable, __file__, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def child(step: str, url: str, now_text: str, workers: str = "") -> None:
    """`_pass` or `_rebuild`: the step's seconds and peak RSS, as one JSON line."""
    import logging

    import structlog

    from reconciliation.policy import ReconcilePolicy
    from reconciliation.rebuild.run import Mode, rebuild
    from reconciliation.reconcile import run_pass
    from reconciliation.store.db import make_engine, make_session_factory
    from upstream.webhooks.payloads import configured_reader

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    engine = make_engine(url)
    now = datetime.fromisoformat(now_text)
    started = time.perf_counter()
    figures: dict[str, Any] = {}
    if step == "_pass":
        result = run_pass(make_session_factory(engine), ReconcilePolicy(), now=now, publish=False)
        figures["alerts_opened"] = len(result.alerts.opened)
    else:
        rebuilt = rebuild(
            engine,
            ReconcilePolicy(),
            configured_reader(),
            mode=Mode.DRY_RUN,
            workers=int(workers) if workers else None,
        )
        assert rebuilt.comparison is not None
        figures["same"] = rebuilt.comparison.same
        figures["digest"] = rebuilt.comparison.live.overall
        figures["differences"] = [d.as_dict() for d in rebuilt.comparison.differences]
        figures["phases"] = {k: round(v, 2) for k, v in rebuilt.seconds.items()}
    figures["seconds"] = time.perf_counter() - started
    own, workers_used = (
        resource.getrusage(r) for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    figures["peak_mb"] = own.ru_maxrss / 1024
    figures["cpu"] = {
        "own": round(own.ru_utime + own.ru_stime, 2),
        "workers": round(workers_used.ru_utime + workers_used.ru_stime, 2),
    }
    print(json.dumps(figures, default=str))


def bench(kind: str, size: int, keep: bool = False, workers: int | None = None) -> dict[str, Any]:
    from sqlalchemy import text

    from migrations import runner as migrate
    from reconciliation.store.db import make_engine

    cleanup: Any
    if kind == "postgres":
        admin = os.environ.get(
            "BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
        ).replace("postgresql://", "postgresql+psycopg://", 1)
        name = f"recon_bench_rebuild_{uuid.uuid4().hex[:8]}"
        admin_engine = make_engine(admin, isolation_level="AUTOCOMMIT")
        with admin_engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = admin.rpartition("/")[0] + "/" + name

        def cleanup() -> None:
            if not keep:
                with admin_engine.connect() as conn:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin_engine.dispose()
    else:
        folder = Path(tempfile.mkdtemp(prefix="recon-bench-rebuild-"))
        url = f"sqlite:///{folder / 'bench.db'}"

        def cleanup() -> None:
            if keep:
                return
            for f in folder.iterdir():
                f.unlink()
            folder.rmdir()

    try:
        migrate.upgrade(url)
        started = time.perf_counter()
        data = generate(Shape(size))
        notes = data["notifications"]
        data["notifications"] = lambda: iter(())
        load_with_snapshots(load_postgres if kind == "postgres" else load_sqlite_url, url, data)
        load_inbox(kind, url, notes)
        load_seconds = time.perf_counter() - started
        now = data["last"] + timedelta(days=1)
        full = in_child("_pass", url, now.isoformat())
        again = in_child("_rebuild", url, now.isoformat(), "" if workers is None else str(workers))
        return {
            "database": kind,
            "postings": size,
            "transfers": size,
            "deliveries_and_notifications": size,
            "load_seconds": round(load_seconds, 1),
            "full_pass_seconds": round(full["seconds"], 2),
            "full_pass_peak_rss_mb": round(full["peak_mb"], 1),
            "rebuild_seconds": round(again["seconds"], 2),
            "rebuild_phases": again["phases"],
            "rebuild_peak_rss_mb": round(again["peak_mb"], 1),
            "rebuild_cpu_seconds": again["cpu"],
            "cpus": os.cpu_count(),
            "ratio_rebuild_to_pass": round(again["seconds"] / full["seconds"], 2),
            "rebuilt_equals_live": again["same"],
            "digest": again["digest"],
            "differences": again["differences"],
            **({"kept": {"url": url, "now": now.isoformat()}} if keep else {}),
        }
    finally:
        cleanup()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("_pass", "_rebuild"):
        child(*sys.argv[1:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000, help="records per stream")
    parser.add_argument("--only", choices=["postgres", "sqlite"])
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the loaded store and print its URL and time, to profile one step on it: "
        "python -m cProfile -o rb.prof bench/rebuild.py _rebuild URL TIME",
    )
    parser.add_argument(
        "--workers", type=int, help="the rebuild's body-reading processes (default: its own)"
    )
    args = parser.parse_args()
    ratios = []
    for kind in [args.only] if args.only else ["postgres", "sqlite"]:
        found = bench(kind, args.size, args.keep, args.workers)
        print(json.dumps(found, indent=2), flush=True)
        ratios.append(
            f"{kind}: rebuild {found['rebuild_seconds']} s / full pass "
            f"{found['full_pass_seconds']} s = {found['ratio_rebuild_to_pass']}x "
            f"(same run, {args.size:,} per stream, target <= 2x; rebuilt equals live: "
            f"{found['rebuilt_equals_live']})"
        )
    for line in ratios:
        print(line)


if __name__ == "__main__":
    main()
