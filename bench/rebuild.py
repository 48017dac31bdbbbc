"""Benchmark: `recon rebuild` against a full reconciliation pass, over the same store, same run.

    .venv/bin/python bench/rebuild.py --only postgres --size 100000

The store is bench/reconcile.py's, except that every notification comes from a delivery whose
bytes are in the inbox (the `recon` payload shape), which a rebuild reads again. Each in a
fresh interpreter: a full pass from scratch, then a dry-run rebuild (facts copied into the
scratch, bodies read again, a pass there, digests compared). It prints both times and peak RSS,
the ratio rebuild / pass, the rebuild's phases and CPU seconds (its own, its body readers'),
and whether the rebuilt state equals the live one (it must). `--workers N` sets the rebuild's
reading processes (0: its own process). Both use every core: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from harness import database, in_child, quiet_logs
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


def child(step: str, url: str, now_text: str, workers: str = "") -> None:
    """`_pass` or `_rebuild` in a fresh interpreter: its figures, as one JSON line."""
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
    else:
        reader, count = configured_reader(), int(workers) if workers else None
        rebuilt = rebuild(engine, ReconcilePolicy(), reader, mode=Mode.DRY_RUN, workers=count)
        assert rebuilt.comparison is not None
        figures["same"] = rebuilt.comparison.same
        figures["digest"] = rebuilt.comparison.live.overall
        figures["differences"] = [d.as_dict() for d in rebuilt.comparison.differences]
        figures["phases"] = {k: round(v, 2) for k, v in rebuilt.seconds.items()}
    figures["seconds"] = time.perf_counter() - started
    own, readers = (resource.getrusage(r) for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    figures["peak_mb"] = own.ru_maxrss / 1024
    figures["cpu"] = {
        "own": round(own.ru_utime + own.ru_stime, 2),
        "workers": round(readers.ru_utime + readers.ru_stime, 2),
    }
    print(json.dumps(figures, default=str))


def bench(kind: str, size: int, workers: int | None) -> dict[str, Any]:
    with database(kind, "rebuild") as url:
        started = time.perf_counter()
        streams = generate(size)
        tables = store_tables(streams)
        tables[4:5] = inbox(streams)  # the notifications, each with its delivery
        write(url, tables)
        load_seconds = time.perf_counter() - started
        now = (streams.last + timedelta(days=1)).isoformat()
        full = in_child(__file__, "_pass", url, now)
        again = in_child(__file__, "_rebuild", url, now, "" if workers is None else str(workers))
    return {
        "database": kind,
        "records_per_stream": size,
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
    }


def main() -> None:
    if sys.argv[1:2] in (["_pass"], ["_rebuild"]):
        child(*sys.argv[1:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000, help="records per stream")
    parser.add_argument("--only", choices=["postgres", "sqlite"])
    parser.add_argument(
        "--workers", type=int, help="the rebuild's body-reading processes (default: its own)"
    )
    args = parser.parse_args()
    ratios = []
    for kind in [args.only] if args.only else ["postgres", "sqlite"]:
        found = bench(kind, args.size, args.workers)
        print(json.dumps(found, indent=2), flush=True)
        ratios.append(
            f"{kind}: rebuild {found['rebuild_seconds']} s / full pass "
            f"{found['full_pass_seconds']} s = {found['ratio_rebuild_to_pass']}x "
            f"(same run, {args.size:,} per stream; rebuilt equals live: "
            f"{found['rebuilt_equals_live']})"
        )
    print("\n".join(ratios))


if __name__ == "__main__":
    main()
