"""What every actor of a process shares: settings, the store, the provider clients.

Built once per process, lazily, on first use (from the environment), or installed explicitly by
the process's entry point (`recon worker`, the embedded runner, tests and benchmarks, which may
pass an in-process HTTP transport). Engines and httpx clients are thread-safe and pooled, so
one of each serves all worker threads.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import httpx
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from foundation import Settings, load_settings
from reconciliation.store import make_engine, make_session_factory, utcnow
from upstream import DEFAULT_LIMITS, DEFAULT_TIMEOUT, CompanyClient, GatewayClient, IdempotencyKeys
from workers.gateway_rate_limit import RateLimitedTransport, build_limiter


@dataclass(slots=True)
class Runtime:
    """The shared parts of a worker process. `close()` releases pools and connections."""

    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    gateway: GatewayClient
    company: CompanyClient
    gateway_transport: RateLimitedTransport
    clock: Callable[[], datetime] = utcnow
    lease_seconds: float | None = None
    closed: bool = field(default=False)

    def close(self) -> None:
        """Release the store pool and the HTTP connections."""
        if self.closed:
            return
        self.closed = True
        self.gateway.close()
        self.company.close()
        self.engine.dispose()


class _Installed:
    """The process's runtime, behind a lock (actors on many threads ask for it at once)."""

    lock = threading.Lock()
    runtime: Runtime | None = None


def build_runtime(
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Callable[[], datetime] = utcnow,
    lease_seconds: float | None = None,
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
) -> Runtime:
    """Build the shared parts.

    `transport` replaces real HTTP (benchmarks, in-process tests); `timeout` bounds each
    provider request (tests shorten it to provoke timeouts).
    """
    engine = make_engine(settings.store.database_url)
    inner = transport if transport is not None else httpx.HTTPTransport(limits=DEFAULT_LIMITS)
    limited = RateLimitedTransport(
        inner,
        build_limiter(settings.broker.redis_url, settings.provider.gateway_requests_per_second),
    )
    gateway = GatewayClient(
        settings.provider.gateway_url,
        settings.provider.gateway_api_key.reveal(),
        transport=limited,
        idempotency=_store_keys(engine),
        timeout=timeout,
    )
    company = CompanyClient(
        settings.provider.company_url,
        settings.provider.company_api_key.reveal(),
        settings.provider.company_app_id,
        transport=transport,
        timeout=timeout,
    )
    return Runtime(
        settings=settings,
        engine=engine,
        sessions=make_session_factory(engine),
        gateway=gateway,
        company=company,
        gateway_transport=limited,
        clock=clock,
        lease_seconds=lease_seconds,
    )


def install_runtime(runtime: Runtime) -> Runtime:
    """Make `runtime` the one this process's actors use; the previous one is closed."""
    with _Installed.lock:
        previous, _Installed.runtime = _Installed.runtime, runtime
    if previous is not None and previous is not runtime:
        previous.close()
    return runtime


def current_runtime() -> Runtime:
    """The installed runtime, built from the environment on first use."""
    with _Installed.lock:
        if _Installed.runtime is None:
            _Installed.runtime = build_runtime(load_settings())
        return _Installed.runtime


def uninstall_runtime() -> None:
    """Close and forget the installed runtime (end of a test or of an embedded run)."""
    with _Installed.lock:
        previous, _Installed.runtime = _Installed.runtime, None
    if previous is not None:
        previous.close()


def release_runtime(runtime: Runtime) -> None:
    """Close `runtime`, and forget it if it is the installed one."""
    with _Installed.lock:
        if _Installed.runtime is runtime:
            _Installed.runtime = None
    runtime.close()


def worker_identity(role: str) -> str:
    """A name for one unit of work that no other thread, process or machine shares.

    Used as a lease owner: host and pid tell an operator where it ran, the random suffix keeps
    two threads (or a restarted process with a recycled pid) apart.
    """
    return f"{role}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _store_keys(engine: Engine) -> IdempotencyKeys:
    """Idempotency keys kept in the store (workers only read; this keeps any write safe)."""
    from reconciliation.transfers import StoreIdempotencyKeys

    return StoreIdempotencyKeys(make_session_factory(engine))
