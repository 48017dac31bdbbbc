"""What every bench shares: throwaway stores, a private Redis, waiting, a child run, process
readings and metrics, and the min / median / max over rounds each bench prints its ratios as.

The benches run as `python bench/NAME.py`, so this folder comes first on the import path and
`import harness` finds this module; importing it puts the checkout there too, for the data the
tests and the benches build alike (under tests/, which never imports bench/).
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The PostgreSQL server throwaway databases are made on, unless BENCH_POSTGRES_URL (or
#: RECON_BENCH_POSTGRES_URL) names another.
DEFAULT_POSTGRES: Final = "postgresql://postgres@127.0.0.1:5432/postgres"
#: The admin token of every recon process a bench starts (and of the console it signs in to).
ADMIN_TOKEN: Final = "bench-admin-token-0123456789abcdef"


def plain(url: str) -> str:
    """A database URL as psycopg takes it (no SQLAlchemy driver name)."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def postgres_database(label: str) -> Iterator[str]:
    """A new migrated database named after the bench, dropped afterwards; yields its URL."""
    from sqlalchemy import create_engine, text

    from migrations import runner as migrate

    server = os.environ.get("BENCH_POSTGRES_URL") or os.environ.get("RECON_BENCH_POSTGRES_URL")
    server = "postgresql+psycopg://" + plain(server or DEFAULT_POSTGRES).split("://", 1)[1]
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    name = f"recon_bench_{label}_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = server.rpartition("/")[0] + f"/{name}"
        migrate.upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def sqlite_database() -> Iterator[str]:
    """A migrated SQLite file in a folder of its own, removed afterwards."""
    from migrations import runner as migrate

    folder = Path(tempfile.mkdtemp(prefix="recon-bench-"))
    try:
        url = f"sqlite:///{folder / 'bench.db'}"
        migrate.upgrade(url)
        yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def database(kind: str, label: str) -> Any:
    """`postgres_database` or `sqlite_database` by `kind` ("postgres" or "sqlite")."""
    return postgres_database(label) if kind == "postgres" else sqlite_database()


def wait_until(condition: Callable[[], Any], seconds: float, what: str, every: float = 0.1) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {what} did not happen within {seconds:.0f} s")
        time.sleep(every)


@contextmanager
def services(label: str) -> Iterator[tuple[Path, str, str]]:
    """A scratch folder, a new migrated PostgreSQL database and a redis-server of the bench's
    own (the tests' one, no persistence), all gone afterwards; yields (folder, database URL,
    Redis URL)."""
    from tests.integration.workers.private_redis import PrivateRedis

    with (
        tempfile.TemporaryDirectory(prefix=f"recon-bench-{label}-") as folder,
        postgres_database(label) as url,
    ):
        server = PrivateRedis(Path(folder)).start()
        try:
            yield Path(folder), url, server.url
        finally:
            server.stop()


def recon_env(database_url: str, state_dir: Path, **extra: str) -> dict[str, str]:
    """What a recon process needs to start against `database_url`: the sandbox's default keys."""
    from cryptography.fernet import Fernet

    ours = ("RECON_", "DATABASE_URL", "REDIS_URL")
    return {k: v for k, v in os.environ.items() if not k.startswith(ours)} | {
        "DATABASE_URL": database_url,
        "RECON_STATE_DIR": str(state_dir),
        "RECON_GATEWAY_API_KEY": "ak_test_recon",
        "RECON_COMPANY_API_KEY": "ck_test_recon",
        "RECON_SECRET_KEY": Fernet.generate_key().decode(),
        "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
        "RECON_LOG_FORMAT": "json",
        "RECON_LOG_LEVEL": "warning",
        **extra,
    }


def quiet_logs(level: int = logging.WARNING) -> None:
    """recon logs below `level` dropped: they would bury the figures."""
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))


def in_child(script: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`python script args` in a fresh interpreter (so its peak RSS is its own); the last line
    it prints is its figures, as JSON. Its stderr is returned as "stderr"."""
    done = subprocess.run(
        [sys.executable, script, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1])) | {"stderr": done.stderr}


def metric(port: int, name: str) -> float:
    """The sum of every sample of `name` a process's Prometheus /metrics on `port` shows."""
    import httpx

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of a process, all its threads (None: gone, or elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    # After the command name, state is field 3: utime (14) and stime (15) sit at 11 and 12.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_figures(pid: int) -> dict[str, float]:
    """RSS, open files and threads of a process and all its children, summed."""
    figures, stack = {"rss_mb": 0.0, "open_files": 0.0, "threads": 0.0}, [pid]
    while stack:
        member = stack.pop()
        try:
            for task in Path(f"/proc/{member}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
            status = Path(f"/proc/{member}/status").read_text()
            figures["open_files"] += sum(1 for _ in Path(f"/proc/{member}/fd").iterdir())
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                figures["rss_mb"] += int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                figures["threads"] += int(line.split()[1])
    return figures


def percentile(values: list[float], share: float) -> float:
    """The value `share` of the way up `values` (NaN when there are none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else math.nan


def spread(values: list[float], form: str = "{:.2f}") -> str:
    """min / median / max of a figure over the rounds."""
    shown = (min(values), statistics.median(values), max(values))
    return " / ".join(form.format(v) for v in shown)
