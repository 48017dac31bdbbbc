"""The plumbing of the catch-up bench: databases, a private Redis, waiting, counting, memory.

Kept apart from `catchup.py`, which holds what is measured and how it is reported.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from sandbox_host import Summary, line_checksum
from sqlalchemy import create_engine, func, select, text

from foundation.settings import Settings
from migrations import runner as migrate
from reconciliation.store.db import make_engine
from reconciliation.store.models import ActivityCursor, Holding, Posting
from upstream.wire.balances import Posting as WirePosting
from upstream.wire.common import ValueUnit

ROOT = Path(__file__).resolve().parent.parent
#: Postings asked per activity page, as recon asks by default.
PAGE_SIZE = 200


def prebuilt_pages(postings: int) -> list[list[WirePosting]]:
    """`postings` parsed postings of one holding in pages of `PAGE_SIZE`, for the write path."""
    unit = ValueUnit.fiat("NGN")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        [
            WirePosting(
                posted_at=start + timedelta(milliseconds=n),
                receipt_ref=uuid.uuid4(),
                journal_ref=uuid.uuid4(),
                line_ref=uuid.uuid4(),
                journal_kind="transfer_settlement",
                posting_side="credit",
                balance_effect="increase",
                amount_minor_units=100 + n,
                value_unit=unit,
                ledger_partition="customer_liability",
                ledger_normal_side="credit_normal",
            )
            for n in range(first, min(first + PAGE_SIZE, postings))
        ]
        for first in range(0, postings, PAGE_SIZE)
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh, migrated database, dropped afterwards."""
    name = f"recon_bench_catchup_{uuid.uuid4().hex[:8]}"
    admin = create_engine(
        admin_url.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    url = f"{url}/{name}"
    migrate.upgrade(url)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def sqlite_database(workdir: Path) -> Iterator[str]:
    url = f"sqlite:///{workdir / 'bench.db'}"
    migrate.upgrade(url)
    yield url


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _answers_ping(port), 10, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait()


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def wait_until(condition: Any, seconds: float, what: str, every: float = 0.05) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {what} did not happen within {seconds:.0f}s")
        time.sleep(every)


def environment(workdir: Path, database_url: str, gateway_url: str) -> dict[str, str]:
    """Settings for a pure catch-up: everything but activity polling is left idle."""
    return {
        "RECON_STATE_DIR": str(workdir / "state"),
        "DATABASE_URL": database_url,
        "RECON_GATEWAY_URL": gateway_url,
        "RECON_GATEWAY_API_KEY": "ak_test_recon",
        "RECON_COMPANY_API_KEY": "ck_test_recon",
        "RECON_SECRET_KEY": Fernet.generate_key().decode(),
        "RECON_ADMIN_TOKEN": "bench-admin-token-0123456789",
        "RECON_GATEWAY_RPS": "1000000",
        "RECON_ACTIVITY_PAGE_SIZE": str(PAGE_SIZE),
        # One read per holding, to its end: no steady-state polls during the measurement.
        "RECON_POLL_ACTIVITY_SECONDS": "86400",
        "RECON_POLL_TRANSFERS_SECONDS": "86400",
        "RECON_SNAPSHOT_BALANCES_SECONDS": "86400",
        "RECON_DISCOVER_HOLDINGS_SECONDS": "86400",
        "RECON_CHECK_SUBSCRIPTION_SECONDS": "86400",
        "RECON_RECONCILE_SECONDS": "86400",
        "RECON_SWEEP_SECONDS": "86400",
        "RECON_LOG_LEVEL": "warning",
        "RECON_LOG_FORMAT": "json",
    }


#: How often the run checks whether every posting is stored (it ends the run, nothing more:
#: the rate is taken from the postings' own ingestion times).
POLL_STORED_SECONDS = 1.0


@contextmanager
def stored_counter(settings: Settings) -> Iterator[Callable[[int], bool]]:
    """`all_stored(n)`: are n postings stored? Checked on one connection kept for the run.

    A fresh engine per check costs the measured process (in-process runs) tens of milliseconds
    of CPU each time, and counting a table of up to a million rows costs the server a scan; so
    the cursors' read counts (a thousand rows) are summed first, and the postings are counted
    only once that sum says they may all be there (it counts a re-read page twice, so it can
    only run ahead of the stored count, never behind).
    """
    engine = make_engine(settings.store.database_url)

    def all_stored(target: int) -> bool:
        with engine.connect() as conn:
            read = conn.scalar(select(func.coalesce(func.sum(ActivityCursor.postings_read), 0)))
            if int(read or 0) < target:
                return False
            return int(conn.scalar(select(func.count()).select_from(Posting)) or 0) >= target

    try:
        yield all_stored
    finally:
        engine.dispose()


def verify(settings: Settings, expected: Summary) -> tuple[bool, float]:
    """Exactly once per holding (count, sum, checksum); also the first-to-last stored span."""
    engine = make_engine(settings.store.database_url)
    got: dict[str, list[int]] = {}
    try:
        with engine.connect() as conn:
            rows = conn.execution_options(yield_per=20_000).execute(
                select(Holding.holding_ref, Posting.line_ref, Posting.amount_minor).join(
                    Holding, Holding.id == Posting.holding_id
                )
            )
            for ref, line, amount in rows:
                entry = got.setdefault(str(ref), [0, 0, 0])
                entry[0] += 1
                entry[1] += amount
                entry[2] ^= line_checksum(line.int)
            first, last = conn.execute(
                select(func.min(Posting.ingested_at), func.max(Posting.ingested_at))
            ).one()
    finally:
        engine.dispose()
    same = all(got.get(ref, [0, 0, 0]) == want for ref, want in expected.items())
    return same and sum(v[0] for v in got.values()) == sum(v[0] for v in expected.values()), (
        last - first
    ).total_seconds() if first and last else 0.0


def peak_rss_mb(pid: int) -> float:
    """The process's high-water RSS, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0
