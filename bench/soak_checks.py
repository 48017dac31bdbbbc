"""What the soak (bench/soak.py) checks and reports: samples, nothing lost, the issue's goals.

Kept apart from the soak itself, which starts recon and drives it: this is what is measured
and how it is judged.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from reconciliation.store.models import Delivery, Notification, Posting, Transfer

#: The issue's goals: table bytes at the end within this share of the bytes after the first
#: retention cycle; worker RSS growth per hour after its warm-up; info log per process per hour.
TABLE_GROWTH_GOAL = 0.10
RSS_GOAL_MB_PER_HOUR = 5.0
RSS_WARMUP_SECONDS = 600.0
LOG_GOAL_MB_PER_HOUR = 1.0
#: The processes the log goal is about (the sandbox and the release step are not recon's).
RECON_PROCESSES = ("web", "worker", "scheduler")


@dataclass
class Driven:
    credits: int = 0
    transfers: int = 0
    denied: int = 0


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def add(self, at: float, figures: dict[str, float]) -> None:
        self.times.append(at)
        for name, value in figures.items():
            self.series.setdefault(name, []).append((at, value))

    def per_hour(self, name: str) -> float:
        """Least-squares slope of the series (from its first sample on), per hour."""
        xs = [x for x, _ in self.series[name]]
        ys = [y for _, y in self.series[name]]
        n = len(xs)
        if n < 2:
            return 0.0
        mx, my = sum(xs) / n, sum(ys) / n
        den = sum((x - mx) ** 2 for x in xs) or 1.0
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den * 3600


class ArchiveReader:
    """The rows retention archived, by table: each file read once it is complete."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.read: dict[Path, tuple[int, list[dict[str, Any]]]] = {}

    def counts(self) -> dict[str, int]:
        """Rows archived so far, by table."""
        tables = {p.name.split("-")[0] for p in self.folder.glob("*.jsonl.gz")}
        return {table: len(self.rows(table)) for table in sorted(tables)}

    def rows(self, table: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for path in sorted(self.folder.glob(f"{table}-*.jsonl.gz")):
            size = path.stat().st_size
            if path not in self.read or self.read[path][0] != size:
                try:
                    with gzip.open(path, "rt", encoding="utf-8") as stream:
                        lines = [json.loads(line) for line in stream if line.strip()]
                except (OSError, EOFError, ValueError):
                    continue  # a batch being appended: read next time
                self.read[path] = (size, lines)
            found += self.read[path][1]
        return found


def check_nothing_lost(factory: Any, driven: Driven, archive: ArchiveReader) -> dict[str, Any]:
    """Over the store and the archive together: the store is read first, so a row pruned
    meanwhile is in the archive, and one in both is counted once (every set is by row id)."""
    with factory() as s:
        postings = {
            r.id: (str(r.journal_ref), str(r.line_ref))
            for r in s.execute(select(Posting.id, Posting.journal_ref, Posting.line_ref))
        }
        notifications = dict(s.execute(select(Notification.id, Notification.event_id)).all())
        originals = dict(
            s.execute(
                select(Delivery.id, Delivery.delivery_id).where(Delivery.original.is_(True))
            ).all()
        )
        settled = set(s.scalars(select(Transfer.id).where(Transfer.is_successful.is_(True))))
    for row in archive.rows("postings"):
        postings[row["id"]] = (row["journal_ref"], row["line_ref"])
    for row in archive.rows("notifications"):
        notifications[row["id"]] = row["event_id"]
    for row in archive.rows("deliveries"):
        if row["original"] is True:
            originals[row["id"]] = row["delivery_id"]
    settled |= {row["id"] for row in archive.rows("transfers") if row["is_successful"] is True}
    expected_postings = driven.credits + 2 * len(settled)
    return {
        "credits": driven.credits,
        "transfers": driven.transfers,
        "settled": len(settled),
        "postings": len(postings),
        "expected_postings": expected_postings,
        "notifications": len(notifications),
        "ok": len(postings) == len(set(postings.values())) == expected_postings
        and len(notifications) == len(set(notifications.values()))
        and len(originals) == len(set(originals.values()))
        and len(notifications) >= driven.credits + len(settled),
    }


def report_goals(samples: Samples, first_cycle: float) -> None:
    """Table bytes after the first retention cycle (`first_cycle` seconds in) against the end,
    and whether each goal of the issue is met."""
    at = next((t for t in samples.times if t >= first_cycle), samples.times[-1])
    tables = sorted(n for n in samples.series if n.startswith("table."))

    def value(name: str, when: float) -> float:
        return next(v for t, v in samples.series[name] if t == when)

    end = samples.times[-1]
    print(f"\ntable bytes after the first retention cycle ({at / 60:.1f} min) vs at the end")
    print(f"{'table':<44}{'after cycle':>12}{'end':>12}{'ratio':>10}")
    total_then = total_end = 0.0
    for name in tables:
        then, last = value(name, at), value(name, end)
        total_then, total_end = total_then + then, total_end + last
        ratio = f"{last / then:.3f}" if then else "-"
        print(f"{name.removeprefix('table.'):<44}{then:>12.2f}{last:>12.2f}{ratio:>10}")
    total_ratio = total_end / total_then if total_then else float("inf")
    print(f"{'total (MB)':<44}{total_then:>12.2f}{total_end:>12.2f}{total_ratio:>10.3f}")

    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    if at >= end:
        print("\ngoals: the run ended before its first retention cycle; run longer to judge")
        return
    flat = total_ratio <= 1 + TABLE_GROWTH_GOAL
    print(f"\ngoal: table bytes flat within {TABLE_GROWTH_GOAL:.0%}: {verdict(flat)}")
    warm = [(t, v) for t, v in samples.series.get("worker.rss_mb", []) if t >= RSS_WARMUP_SECONDS]
    if len(warm) >= 2:
        rss = Samples(series={"rss": warm}).per_hour("rss")
        ok = rss < RSS_GOAL_MB_PER_HOUR
        print(
            f"goal: worker RSS < {RSS_GOAL_MB_PER_HOUR:g} MB/h after "
            f"{RSS_WARMUP_SECONDS / 60:g} min: {rss:+.2f} MB/h, {verdict(ok)}"
        )
    else:
        print(f"goal: worker RSS: fewer than two samples after {RSS_WARMUP_SECONDS / 60:g} min")
    for name in sorted(n for n in samples.series if n.startswith("log.")):
        if name.removeprefix("log.").removesuffix("_mb") not in RECON_PROCESSES:
            continue
        rate = samples.per_hour(name)
        ok = rate <= LOG_GOAL_MB_PER_HOUR
        print(
            f"goal: <= {LOG_GOAL_MB_PER_HOUR:g} MB/h of log, {name.removeprefix('log.')}: "
            f"{rate:+.3f} MB/h, {verdict(ok)}"
        )
