"""The receiver benchmark's servers and what is read from them.

A bare Litestar endpoint (the ceiling), `recon web` processes on a throwaway PostgreSQL
database or a SQLite file, and the three readings every run takes before and after: rows in
the inbox, the server process's CPU seconds (/proc), and the receiver's commits (/metrics).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx
from receiver_load import PATH

#: Admin token for the benchmark's throwaway processes.
ADMIN_TOKEN: Final = "bench-admin-token-0123456789abcdef"
#: Default PostgreSQL server to create the throwaway benchmark database on.
DEFAULT_POSTGRES: Final = "postgresql://postgres@127.0.0.1:5432/postgres"
#: Clock ticks per second of /proc/<pid>/stat's utime and stime.
CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")


def bare_app() -> object:
    """The reference: a Litestar endpoint that answers 204 without reading the body."""
    from litestar import Litestar, post

    @post(PATH, status_code=204)
    async def accept() -> None:
        return None

    return Litestar(route_handlers=[accept], logging_config=None, openapi_config=None)


def serve_bare(port: int) -> None:
    """Serve the bare app as `recon web` serves recon: one uvicorn process, same options."""
    import uvicorn

    from recon.cli.http_protocol import HttpProtocol
    from recon.cli.web_commands import tune_garbage_collector

    tune_garbage_collector()
    uvicorn.run(
        bare_app(),  # type: ignore[arg-type]
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        server_header=False,
        http=HttpProtocol,
    )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Server:
    """A running server: its name, port and process, and the database it stores into."""

    name: str
    port: int
    pid: int
    database_url: str | None


@contextmanager
def server(argv: list[str], env: dict[str, str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """Start a server process and wait until it answers; stop it at the end."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(
                        f"server did not start:\n{log.read().decode()[-3000:]}"
                    ) from None
                time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def start_bare(stack: ExitStack, script: str) -> Server:
    port = free_port()
    argv = [sys.executable, script, "--serve-bare", str(port)]
    process = stack.enter_context(server(argv, dict(os.environ), port))
    return Server("bare 204", port, process.pid, None)


@dataclass(frozen=True)
class ReconSetup:
    """What every `recon web` of one benchmark shares (one store may have several)."""

    secret: str
    secret_key: str
    work: Path


def recon_env(database_url: str, setup: ReconSetup, state_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RECON_") and k not in ("DATABASE_URL", "REDIS_URL")
    }
    return {
        **env,
        "DATABASE_URL": database_url,
        "RECON_STATE_DIR": str(state_dir),
        "RECON_GATEWAY_API_KEY": "ak_test_bench",
        "RECON_COMPANY_API_KEY": "ck_test_bench",
        "RECON_SECRET_KEY": setup.secret_key,
        "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
        "RECON_WEBHOOK_SECRETS": setup.secret,
        "RECON_LOG_FORMAT": "json",
        "RECON_LOG_LEVEL": "warning",
    }


def start_recon(stack: ExitStack, name: str, database_url: str, setup: ReconSetup) -> Server:
    """`recon web` on `database_url`: no registration, no workers (the receiver alone)."""
    port = free_port()
    env = recon_env(database_url, setup, setup.work / f"state-{port}")
    argv = [sys.executable, "-m", "recon", "web", "--no-register", "--no-workers"]
    process = stack.enter_context(server([*argv, "--port", str(port)], env, port))
    return Server(name, port, process.pid, database_url)


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A throwaway migrated database on the PostgreSQL server of `admin_url`."""
    from sqlalchemy import text

    from foundation.settings import normalise_database_url
    from migrations import runner as migrate
    from reconciliation.store.db import make_engine

    admin = make_engine(normalise_database_url(admin_url), isolation_level="AUTOCOMMIT")
    name = f"recon_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = normalise_database_url(admin_url).rpartition("/")[0] + f"/{name}"
    try:
        migrate.upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def postgres_admin_url() -> str:
    """Where to create the throwaway benchmark database."""
    database_url = os.environ.get("DATABASE_URL", "")
    return (
        os.environ.get("RECON_BENCH_POSTGRES_URL")
        or (database_url if database_url.startswith("postgres") else "")
        or DEFAULT_POSTGRES
    )


@dataclass(frozen=True)
class Reading:
    """One server's counters at one moment."""

    stored: int
    cpu_seconds: float
    commits: int


def read(target: Server) -> Reading:
    """Rows stored, the process's CPU seconds so far, and commits so far (0 for bare)."""
    if target.database_url is None:
        return Reading(0, cpu_seconds(target.pid), 0)
    done = commits(target)  # asks the server itself: before its CPU is read
    return Reading(count_deliveries(target.database_url), cpu_seconds(target.pid), done)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process, all its threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    # After the command name: state is field 3, so utime (14) and stime (15) sit at 11 and 12.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def commits(target: Server) -> int:
    """The receiver's commits so far: its batch-size histogram's count on /metrics.

    One batch is one transaction (on PostgreSQL one autocommitted INSERT); PostgreSQL's own
    count (pg_stat_database) would also do, but a busy backend publishes it only after ten
    idle seconds, which would lengthen every run.
    """
    text = httpx.get(f"http://127.0.0.1:{target.port}/metrics", timeout=10).text
    match = re.search(r"^recon_webhook_commit_batch_size_count (\S+)$", text, re.MULTILINE)
    return int(float(match.group(1))) if match else 0


def count_deliveries(database_url: str) -> int:
    from sqlalchemy import func, select

    from foundation.settings import normalise_database_url
    from reconciliation.store.db import make_engine
    from reconciliation.store.models import Delivery

    engine = make_engine(normalise_database_url(database_url))
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Delivery)).scalar_one())
    finally:
        engine.dispose()


def stored_ids(database_url: str) -> dict[str, int]:
    """Every delivery id in the inbox and how many rows it has."""
    from sqlalchemy import func, select

    from reconciliation.store.db import make_engine
    from reconciliation.store.models import Delivery

    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(Delivery.delivery_id, func.count()).group_by(Delivery.delivery_id)
            ).all()
    finally:
        engine.dispose()
    return {delivery_id: int(count) for delivery_id, count in rows}
