"""Where a process's memory grew: tracemalloc, summarised in a log line every interval.

For the day a long-running process's RSS keeps growing and nobody can say why. With
RECON_TRACE_MEMORY_SECONDS set, the process starts tracing its allocations at boot and, every
interval, writes one `memory.grew` line: what Python holds in traced blocks, and the call sites
whose allocations grew most since the previous line (a few frames each, so a site shared by
many callers is told apart). Tracing costs memory and time (roughly a third more of each), so it
is off by default and meant for a diagnostic run, not for production all year.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from typing import Any, Final

import structlog

log = structlog.get_logger(__name__)

#: Frames kept per allocation: enough to see which caller of a shared helper allocates.
FRAMES: Final = 6
#: Call sites listed per line: the largest growths; the rest is noise at this scale.
TOP: Final = 12


def _site(stat: tracemalloc.StatisticDiff) -> dict[str, Any]:
    frames = [
        f"{frame.filename.rsplit('/site-packages/', 1)[-1]}:{frame.lineno}"
        for frame in stat.traceback
    ]
    return {
        "grew_kb": round(stat.size_diff / 1024, 1),
        "held_kb": round(stat.size / 1024, 1),
        "blocks": stat.count,
        "where": frames,
    }


def report_growth(previous: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    """Write one `memory.grew` line against `previous`; return the snapshot taken now."""
    current = tracemalloc.take_snapshot()
    growth = [s for s in current.compare_to(previous, "traceback") if s.size_diff > 0]
    traced, peak = tracemalloc.get_traced_memory()
    log.warning(
        "memory.grew",
        traced_mb=round(traced / 2**20, 1),
        peak_mb=round(peak / 2**20, 1),
        sites=[_site(s) for s in growth[:TOP]],
    )
    return current


def _report_forever(interval_seconds: float) -> None:
    previous = tracemalloc.take_snapshot()
    while True:
        time.sleep(interval_seconds)
        previous = report_growth(previous)


def start_memory_trace(interval_seconds: float) -> bool:
    """Trace allocations and report growth every `interval_seconds` (0: do nothing)."""
    if interval_seconds <= 0:
        return False
    tracemalloc.start(FRAMES)
    threading.Thread(
        target=_report_forever, args=(interval_seconds,), name="recon-memory-trace", daemon=True
    ).start()
    log.warning("memory.tracing", interval_seconds=interval_seconds, frames=FRAMES)
    return True
