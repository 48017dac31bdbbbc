"""Running Dramatiq workers and the scheduler in this process, for `recon worker`/`scheduler`.

The same pieces serve the embedded default (workers.embedded) and the Procfile's processes:
install the runtime and broker from Settings, declare every actor, boot the middleware, start a
Worker on all queues. Shutdown is graceful: worker threads finish their current message (each
is short by design) and unacknowledged messages go back to the queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import httpx
import structlog
from dramatiq import Broker, Worker

from foundation import ConfigError, Settings
from upstream import MAX_PAGE_SIZE
from workers.broker import boot, declared_actor_names, install_broker
from workers.runtime import Runtime, build_runtime, install_runtime, release_runtime
from workers.stop_signal import mark_stopping

#: Worker threads per process unless told otherwise.
DEFAULT_THREADS: Final = 8

#: Milliseconds an idle worker thread waits for a message before checking for shutdown.
WORKER_IDLE_MS: Final = 1_000

log = structlog.get_logger(__name__)


def check_worker_settings(settings: Settings) -> None:
    """Refuse, at start-up, settings the workers cannot honour (one line naming the variable)."""
    if settings.provider.activity_page_size > MAX_PAGE_SIZE:
        raise ConfigError(
            f"RECON_ACTIVITY_PAGE_SIZE={settings.provider.activity_page_size} is not valid: the gateway "
            f"serves at most {MAX_PAGE_SIZE} postings per page"
        )


@dataclass(slots=True)
class RunningWorker:
    """A started Worker with its broker and runtime."""

    worker: Worker
    broker: Broker
    runtime: Runtime

    def stop(self, timeout_ms: int = 30_000) -> None:
        """Let threads finish their message, requeue the rest, release the runtime.

        Long reads are told first (workers.stop_signal), so a catch-up ends after its current
        page and gives its lease back rather than holding it through the stop timeout.
        """
        mark_stopping()
        try:
            self.worker.stop(timeout=timeout_ms)
            self.broker.close()
            release_runtime(self.runtime)
            log.info("worker.stopped")
        finally:
            # Nothing of this worker runs any more: the flag must not outlive it and cut short
            # reads that other code in this process (the CLI, the next worker) does later.
            mark_stopping(False)


def start_worker(
    settings: Settings,
    *,
    threads: int = DEFAULT_THREADS,
    transport: httpx.BaseTransport | None = None,
    lease_seconds: float | None = None,
) -> RunningWorker:
    """Install runtime and broker for `settings`, declare the actors and start consuming."""
    check_worker_settings(settings)
    mark_stopping(False)
    runtime = install_runtime(
        build_runtime(settings, transport=transport, lease_seconds=lease_seconds)
    )
    broker = install_broker(settings.broker.redis_url)
    import workers.actors  # noqa: F401 - declares every actor on the installed broker

    boot(broker)
    worker = Worker(broker, worker_threads=threads, worker_timeout=WORKER_IDLE_MS)
    worker.start()
    log.info(
        "worker.started",
        broker="redis" if settings.broker.redis_url else "in-process",
        threads=threads,
        actors=declared_actor_names(broker),
    )
    return RunningWorker(worker=worker, broker=broker, runtime=runtime)
