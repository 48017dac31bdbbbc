"""Fixtures for the workers' integration tests: a real sandbox over HTTP, a real store.

`sandbox` runs the provider stand-in under uvicorn with short delays (finality, projection,
delivery retries), wrapped by a request probe. `worker_settings` points recon at it and at the
parametrized store (SQLite and PostgreSQL); `runtime` installs the shared parts for the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundation import Settings, load_settings
from reconciliation.store.db import make_engine
from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from tests.conftest import IN_CI, _truncate_postgres
from tests.integration.workers.private_redis import PrivateRedis
from tests.integration.workers.sandbox_probe import RequestProbe, probed_sandbox
from workers import Runtime, build_runtime
from workers.runtime import install_runtime, uninstall_runtime


def fast_sandbox_config(**overrides: Any) -> SandboxConfig:
    """Short delays so life cycles finish in a test's time."""
    base: dict[str, Any] = {
        "transfer_finality_delay_seconds": 0.3,
        "inbound_posting_delay_seconds": 0.05,
        "projection_lag_seconds": 0.0,
        "delivery_retry_schedule": (0.2, 0.5, 1.0),
        "delivery_timeout_seconds": 2.0,
        "background_tick_seconds": 0.01,
    }
    base.update(overrides)
    return SandboxConfig(**base)


@pytest.fixture
def sandbox_config() -> SandboxConfig:
    return fast_sandbox_config()


@pytest.fixture
def probed(sandbox_config: SandboxConfig) -> Iterator[tuple[SandboxServer, RequestProbe]]:
    with probed_sandbox(sandbox_config) as pair:
        yield pair


@pytest.fixture
def sandbox(probed: tuple[SandboxServer, RequestProbe]) -> SandboxServer:
    return probed[0]


@pytest.fixture
def probe(probed: tuple[SandboxServer, RequestProbe]) -> RequestProbe:
    return probed[1]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A redis-server of this test's own (see private_redis.py); fails under CI if missing."""
    if not PrivateRedis.available():
        if IN_CI:
            pytest.fail("redis-server is not installed (needed under CI=true)", pytrace=False)
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def postgres_db_url(postgres_template_url: str) -> str:
    """An empty PostgreSQL store, for the process-level tests that run on it alone.

    Killing and restarting worker processes exercises the broker and the leases; the store's
    behaviour under them is the same SQL the store tests cover on both databases.
    """
    engine = make_engine(postgres_template_url)
    _truncate_postgres(engine)
    engine.dispose()
    return postgres_template_url


@pytest.fixture
def sandbox_env(base_env: dict[str, str], sandbox: SandboxServer) -> dict[str, str]:
    """A complete environment pointing at the sandbox, quick intervals, no store chosen yet."""
    return {
        **base_env,
        "RECON_GATEWAY_URL": sandbox.base_url,
        "RECON_GATEWAY_RPS": "1000",
        "RECON_ACTIVITY_PAGE_SIZE": "50",
        "RECON_POLL_ACTIVITY_SECONDS": "3600",
        "RECON_POLL_TRANSFERS_SECONDS": "0.2",
        "RECON_SNAPSHOT_BALANCES_SECONDS": "3600",
        "RECON_DISCOVER_HOLDINGS_SECONDS": "3600",
        "RECON_CHECK_SUBSCRIPTION_SECONDS": "3600",
        "RECON_SWEEP_SECONDS": "3600",
        "RECON_DELIVERY_GRACE_SECONDS": "1",
    }


@pytest.fixture
def worker_env(sandbox_env: dict[str, str], db_url: str) -> dict[str, str]:
    """The sandbox environment on this test's store (SQLite and PostgreSQL)."""
    return {**sandbox_env, "DATABASE_URL": db_url}


@pytest.fixture
def worker_settings(worker_env: dict[str, str]) -> Settings:
    return load_settings(worker_env)


@pytest.fixture
def runtime(worker_settings: Settings) -> Iterator[Runtime]:
    rt = install_runtime(build_runtime(worker_settings))
    yield rt
    uninstall_runtime()
