"""Where a process's memory grew: tracemalloc, summarised in a log line every interval.

For the day a long-running process's RSS keeps growing and nobody can say why. With
RECON_TRACE_MEMORY_SECONDS set, the process starts tracing its allocations at boot and, every
interval, writes one `memory.grew` line: the resident size, what Python holds in traced blocks
(if the first grows and the second does not, the growth is outside Python's objects: the C
allocator keeping freed memory, or a native library), and the call sites whose allocations grew
most since the previous line (a few frames each, so a site shared by many callers is told
apart). Tracing is not free (a soaked worker's resident size rose by about 60%, and every
allocation is slower), so it is off by default and meant for a diagnostic run.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Final

import structlog

log = structlog.get_logger(__name__)

#: Frames kept per allocation: enough to see which caller of a shared helper allocates.
FRAMES: Final = 6
#: Call sites listed per line: the largest growths; the rest is noise at this scale.
TOP: Final = 12
#: The snapshots' own allocations (the previous snapshot is held while the next is taken) and
#: this module's: left out, or every report would name the tracer as the top grower.
_NOT_OURS: Final = (
    tracemalloc.Filter(False, tracemalloc.__file__),
    tracemalloc.Filter(False, __file__),
)


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
    current = tracemalloc.take_snapshot().filter_traces(_NOT_OURS)
    growth = [s for s in current.compare_to(previous, "traceback") if s.size_diff > 0]
    traced, peak = tracemalloc.get_traced_memory()
    log.warning(
        "memory.grew",
        rss_mb=_rss_mb(),
        traced_mb=round(traced / 2**20, 1),
        peak_mb=round(peak / 2**20, 1),
        sites=[_site(s) for s in growth[:TOP]],
    )
    return current


def _rss_mb() -> float | None:
    """Resident memory now (Linux); None where /proc is not there. Compared with `traced_mb`,
    it tells Python objects that grow from memory the C allocator keeps or native code holds."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def _report_forever(interval_seconds: float) -> None:
    previous = tracemalloc.take_snapshot().filter_traces(_NOT_OURS)
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
