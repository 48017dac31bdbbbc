"""The embedded default: workers and scheduler inside another process, on the in-process broker.

With REDIS_URL unset, `recon web` (and the demo) call `start_embedded(settings)`: a Dramatiq
Worker consumes Dramatiq's StubBroker in this process, and the scheduler runs in a thread,
its singleton lock held in the store. The actors are exactly those `recon worker` runs on
Redis; only the broker differs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

import httpx
import structlog
from dramatiq.brokers.stub import StubBroker

from foundation import Settings
from workers.runtime import worker_identity
from workers.scheduler import TickScheduler, configured_ticks
from workers.scheduler_lock import (
    LOCK_SECONDS,
    RedisSchedulerLock,
    SchedulerLock,
    StoreSchedulerLock,
)
from workers.worker_process import RunningWorker, start_worker

#: Worker threads of the embedded runner (it shares the process with the web app).
EMBEDDED_THREADS: Final = 4

#: How long the queues must stay empty before `join_idle` calls the workers idle.
IDLE_QUIET_SECONDS: Final = 0.2

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class EmbeddedWorkers:
    """Handle on the embedded workers and scheduler."""

    running: RunningWorker
    scheduler: TickScheduler | None

    def stop(self) -> None:
        """Stop the scheduler, then the workers (finishing their current messages)."""
        if self.scheduler is not None:
            self.scheduler.stop()
        self.running.stop()
        log.info("embedded.stopped")

    def join_idle(self, timeout: float) -> bool:
        """Wait until no message is queued, delayed or in progress; False on timeout.

        Ticks keep arriving while the scheduler runs, so "idle" means a short quiet moment, not
        the end of all work.
        """
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            if self.busy():
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= IDLE_QUIET_SECONDS:
                return True
            time.sleep(0.02)
        return False

    def busy(self) -> bool:
        """True while any message is queued, delayed or being processed in this process."""
        broker = self.running.broker
        if isinstance(broker, StubBroker) and any(
            queue.unfinished_tasks for queue in broker.queues.values()
        ):
            return True
        return bool(self.running.worker.work_queue.unfinished_tasks)


def start_embedded(
    settings: Settings,
    *,
    threads: int = EMBEDDED_THREADS,
    transport: httpx.BaseTransport | None = None,
    with_scheduler: bool = True,
    lock_seconds: float = LOCK_SECONDS,
    lease_seconds: float | None = None,
) -> EmbeddedWorkers:
    """Start workers (and, by default, the scheduler) in this process; returns at once."""
    running = start_worker(
        settings, threads=threads, transport=transport, lease_seconds=lease_seconds
    )
    scheduler: TickScheduler | None = None
    if with_scheduler:
        scheduler = TickScheduler(
            configured_ticks(settings),
            scheduler_lock(settings, running, lock_seconds),
            lock_seconds=lock_seconds,
        )
        scheduler.start()
    log.info("embedded.started", threads=threads, scheduler=with_scheduler)
    return EmbeddedWorkers(running=running, scheduler=scheduler)


def scheduler_lock(settings: Settings, running: RunningWorker, seconds: float) -> SchedulerLock:
    """Redis lock when Redis is configured, else a lease row in the store."""
    owner = worker_identity("scheduler")
    if settings.broker.redis_url is not None:
        return RedisSchedulerLock(settings.broker.redis_url, owner, seconds)
    return StoreSchedulerLock(running.runtime.sessions, owner, seconds)
