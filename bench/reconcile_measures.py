"""What bench/reconcile.py measures: a pass in a fresh interpreter, the bare join, the bare write.

Kept apart from the orchestration so that each part stays readable: this module knows how to
time one thing against a store at `url`; bench/reconcile.py decides what to time, how often,
and prints the figures.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parent.parent

#: Tables a pass writes (and nothing else does in the bench): emptied between rounds so every
#: round's full pass starts from the same store as the first.
PASS_TABLES: Final = (
    "matches",
    "match_backlog",
    "alerts",
    "balance_checks",
    "watermarks",
    "leases",
)


@dataclass(frozen=True, slots=True)
class PassRun:
    """One pass in a child process: its figures, and (with explain) the plans it ran."""

    figures: dict[str, Any]
    plans: str


def run_pass_in_child(url: str, now: datetime, explain_ms: float | None = None) -> PassRun:
    """One pass in a fresh interpreter: its wall time and its own peak RSS.

    explain_ms: print (on the child's stderr, returned as `plans`) the plan with ANALYZE and
    BUFFERS of every statement slower than this, through auto_explain: the plans the pass
    really ran, not a replay. The timing of such a pass includes auto_explain's overhead.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if explain_ms is not None:
        env["BENCH_EXPLAIN"] = str(explain_ms)
    script = str(Path(__file__).resolve().parent / "reconcile.py")
    out = subprocess.run(
        [sys.executable, script, "_pass", url, now.isoformat()],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    if os.environ.get("BENCH_TRACE"):
        print(out.stderr, file=sys.stderr)
    figures = dict(json.loads(out.stdout.strip().splitlines()[-1]))
    return PassRun(figures, out.stderr if explain_ms is not None else "")


def child_pass(url: str, now_text: str) -> None:
    """The child's side of run_pass_in_child: run one pass, print its figures as JSON."""
    import logging

    import structlog

    from reconciliation.policy import ReconcilePolicy
    from reconciliation.reconcile import run_pass
    from reconciliation.store.db import make_engine, make_session_factory

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    engine = make_engine(url)
    backends = watch_backends(engine)
    if os.environ.get("BENCH_TRACE"):
        _trace_slow_statements(engine)
    if os.environ.get("BENCH_EXPLAIN") and engine.dialect.name == "postgresql":
        _explain_statements(engine, float(os.environ["BENCH_EXPLAIN"]))
    factory = make_session_factory(engine)
    client_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    result = run_pass(
        factory, ReconcilePolicy(), now=datetime.fromisoformat(now_text), publish=False
    )
    seconds = time.perf_counter() - started
    client = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (client.ru_utime + client.ru_stime) - (
        client_before.ru_utime + client_before.ru_stime
    )
    peak_kb = client.ru_maxrss
    server_cpu = backends.cpu_seconds()
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": peak_kb / 1024,
                "server_cpu": server_cpu,
                "client_cpu": client_cpu,
                "matched": dict(result.matched.rows_by_rule),
                "ambiguities": len(result.matched.ambiguities),
                "alerts_opened": len(result.alerts.opened),
                "phases": result.seconds
                | {f"matching.{k}": v for k, v in getattr(result, "matching_seconds", {}).items()},
            }
        )
    )


def _trace_slow_statements(engine: Any) -> None:
    """BENCH_TRACE=<ms>: every statement at least that slow, with its wall time and the CPU
    time of its server backend (when /proc shows it), on stderr (0: all of them, to count
    round trips)."""
    from sqlalchemy import event

    threshold = float(os.environ["BENCH_TRACE"]) / 1000

    def backend(conn: Any) -> int | None:
        if "backend" not in conn.info and engine.dialect.name == "postgresql":
            raw = conn.connection.dbapi_connection
            conn.info["backend"] = int(raw.info.backend_pid)
        pid: int | None = conn.info.get("backend")
        return pid

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: Any, *_: Any) -> None:
        pid = backend(conn)
        cpu = _cpu_of(pid) if pid else None
        conn.info.setdefault("started", []).append((time.perf_counter(), cpu))

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        started, cpu_before = conn.info["started"].pop()
        took = time.perf_counter() - started
        pid = backend(conn)
        cpu_after = _cpu_of(pid) if pid else None
        cpu = "" if cpu_before is None or cpu_after is None else f"{cpu_after - cpu_before:6.2f}"
        if took >= threshold:
            text = " ".join(statement.split())[:150]
            print(f"{took:7.3f}s cpu {cpu:>6} {text}", file=sys.stderr)


def _explain_statements(engine: Any, min_ms: float) -> None:
    """The plan (ANALYZE, BUFFERS) of every statement slower than `min_ms`, on stderr, through
    auto_explain at NOTICE level."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _load(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.add_notice_handler(
            lambda notice: print(notice.message_primary + "\n", file=sys.stderr)
        )
        with dbapi_connection.cursor() as cur:
            cur.execute("LOAD 'auto_explain'")
            for name, value in (
                ("log_min_duration", str(int(min_ms))),
                ("log_analyze", "on"),
                ("log_buffers", "on"),
                ("log_timing", "on"),
                ("log_nested_statements", "on"),
                ("log_level", "notice"),
            ):
                cur.execute(f"SET auto_explain.{name} = '{value}'")
        dbapi_connection.commit()


def _cpu_of(pid: int) -> float | None:
    """User + system CPU seconds a process has used (None: not on this machine, or gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Backends:
    """The server processes (PostgreSQL backends) an engine's connections run on, and the CPU
    time they have used since: a figure the other work on a shared machine disturbs far less
    than wall time. Parallel workers are not counted (--cpu turns them off)."""

    def __init__(self) -> None:
        self.start: dict[int, float] = {}

    def add(self, pid: int) -> None:
        self.start[pid] = _cpu_of(pid) or 0.0

    def cpu_seconds(self) -> float | None:
        used = [_cpu_of(pid) for pid in self.start]
        if not used or any(u is None for u in used):
            return None
        return sum(u or 0.0 for u in used) - sum(self.start.values())


def watch_backends(engine: Any) -> Backends:
    """Record the backend of every connection `engine` opens (PostgreSQL)."""
    from sqlalchemy import event

    backends = Backends()
    if engine.dialect.name != "postgresql":
        return backends

    @event.listens_for(engine, "connect")
    def _record(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            backends.add(int(cur.fetchone()[0]))
        dbapi_connection.commit()

    return backends


@dataclass(frozen=True, slots=True)
class Timed:
    """Wall seconds, and the server's CPU seconds when they can be read."""

    seconds: float
    server_cpu: float | None


def hash_join(url: str) -> Timed:
    """The floor: a bare SQL hash join of the matching keys into a new table."""
    from sqlalchemy import text

    from reconciliation.store.db import make_engine

    engine = make_engine(url)
    backends = watch_backends(engine)
    sql = (
        "CREATE TABLE bench_join AS SELECT n.id AS notification_id, p.id AS posting_id, "
        "t.id AS transfer_id FROM notifications n "
        "LEFT JOIN postings p ON p.receipt_ref = n.receipt_ref "
        "LEFT JOIN transfers t ON t.transfer_ref = n.transfer_ref"
    )
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS bench_join"))
    cpu_before = backends.cpu_seconds()
    started = time.perf_counter()
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL enable_nestloop = off"))  # a hash join, as advertised
        conn.execute(text(sql))
    seconds = time.perf_counter() - started
    cpu_after = backends.cpu_seconds()
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE bench_join"))
    engine.dispose()
    if cpu_before is None or cpu_after is None:
        return Timed(seconds, None)
    return Timed(seconds, cpu_after - cpu_before)


def bare_write(url: str) -> float:
    """PostgreSQL: the same join's rows INSERTed into a table shaped like `matches`, with its
    indexes: what writing the match rows alone costs, the part of a pass no query plan saves."""
    from sqlalchemy import text

    from reconciliation.store.db import make_engine

    engine = make_engine(url)
    sql = (
        "INSERT INTO bench_write (rule, posting_id, transfer_id, notification_id, matched_at, "
        "matched_by) SELECT 'bench', p.id, t.id, n.id, now(), 'bench' FROM notifications n "
        "LEFT JOIN postings p ON p.receipt_ref = n.receipt_ref "
        "LEFT JOIN transfers t ON t.transfer_ref = n.transfer_ref"
    )
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS bench_write"))
        conn.execute(text("CREATE TABLE bench_write (LIKE matches INCLUDING ALL)"))
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL enable_nestloop = off"))
        conn.execute(text(sql))
    seconds = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE bench_write"))
    engine.dispose()
    return seconds


def reset_store(url: str) -> None:
    """Undo what passes wrote, so the next round's full pass starts from scratch again."""
    from sqlalchemy import text

    from reconciliation.store.db import make_engine

    engine = make_engine(url)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(PASS_TABLES)} RESTART IDENTITY"))
        else:
            for table in PASS_TABLES:
                conn.execute(text(f"DELETE FROM {table}"))
        for table in ("postings", "notifications", "transfers"):
            conn.execute(
                text(
                    f"UPDATE {table} SET match_status = 'unmatched' "
                    "WHERE match_status = 'exception'"
                )
            )
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
    engine.dispose()
