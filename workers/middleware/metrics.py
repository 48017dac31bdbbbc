"""Prometheus instruments for worker messages, on a registry of the workers' own.

Dramatiq's bundled Prometheus middleware forks an exposition server from its own CLI and keeps
multiprocess files in a temp dir; `recon worker` is not that CLI, so this small middleware
counts on `REGISTRY`, which `recon worker --metrics-port` serves (and the embedded default can
add to the web app's /metrics).
"""

from __future__ import annotations

import time
from typing import Any, Final

from dramatiq import Broker, Middleware
from dramatiq.broker import MessageProxy
from dramatiq.errors import Retry
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: The registry the worker's /metrics renders.
REGISTRY: Final = CollectorRegistry(auto_describe=True)

#: Messages finished, by actor and outcome (done, failed, retry, skipped).
MESSAGES: Final = Counter(
    "recon_worker_messages",
    "Worker messages finished, by actor and outcome.",
    ["actor", "outcome"],
    registry=REGISTRY,
)
#: Messages being processed right now, by actor.
IN_PROGRESS: Final = Gauge(
    "recon_worker_messages_in_progress",
    "Worker messages being processed.",
    ["actor"],
    registry=REGISTRY,
)
#: Time spent per message, by actor.
DURATION: Final = Histogram(
    "recon_worker_message_seconds",
    "Time spent processing one message.",
    ["actor"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
    registry=REGISTRY,
)
#: Postings stored by the activity poller (the catch-up's progress).
POSTINGS_STORED: Final = Counter(
    "recon_worker_postings_stored",
    "Ledger postings read from the gateway and committed to the store.",
    registry=REGISTRY,
)
#: Time to commit one page of postings with its cursor (the catch-up's store write path).
PAGE_WRITE_SECONDS: Final = Histogram(
    "recon_worker_activity_page_write_seconds",
    "Time to insert one page of postings and move the cursor, in one transaction.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
    registry=REGISTRY,
)
#: Gateway requests that waited for the shared rate limit, and for how long.
RATE_LIMIT_WAIT: Final = Histogram(
    "recon_worker_gateway_rate_limit_wait_seconds",
    "Time a gateway request waited for a slot under the shared rate limit.",
    buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)

#: The gateway request rate in use: RECON_GATEWAY_RPS, lower for a while after a 429.
RATE_IN_USE: Final = Gauge(
    "recon_worker_gateway_rate_per_second",
    "Gateway requests per second in use, all workers together (lowered after a 429).",
    registry=REGISTRY,
)


class WorkerMetrics(Middleware):
    """Counts, times and gauges every message by actor."""

    def __init__(self) -> None:
        # Start times by message id; kept here rather than in message.options, which a retry
        # would serialise back onto the queue.
        self._started: dict[str, float] = {}

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        IN_PROGRESS.labels(message.actor_name).inc()
        self._started[message.message_id] = time.perf_counter()

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        started = self._started.pop(message.message_id, None)
        IN_PROGRESS.labels(message.actor_name).dec()
        if started is not None:
            DURATION.labels(message.actor_name).observe(time.perf_counter() - started)
        if exception is None:
            outcome = "done"
        elif isinstance(exception, Retry):
            outcome = "retry"
        else:
            outcome = "failed"
        MESSAGES.labels(message.actor_name, outcome).inc()

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        if self._started.pop(message.message_id, None) is not None:
            IN_PROGRESS.labels(message.actor_name).dec()
        MESSAGES.labels(message.actor_name, "skipped").inc()
