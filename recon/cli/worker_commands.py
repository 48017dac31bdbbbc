"""`recon worker` and `recon scheduler`: the Procfile's background processes.

`recon worker` consumes every queue with a pool of threads; run as many as the load needs, on
as many machines, all on one Redis. Without REDIS_URL it runs the embedded default instead:
the workers and the scheduler in this one process, on the in-process broker.

`recon scheduler` sends the periodic ticks. Several may run (for availability): a lock lets one
send and keeps the others on standby.
"""

from __future__ import annotations

import click

from foundation import ConfigError
from recon.cli.startup import (
    ensure_port_free,
    fail,
    require_redis_or_exit,
    serving_store_or_exit,
    settings_or_exit,
)
from reconciliation.postings import LEASE_SECONDS
from workers import LOCK_SECONDS


@click.command()
@click.option(
    "--threads",
    type=click.IntRange(1, 256),
    default=8,
    show_default=True,
    help="Worker threads in this process.",
)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=1.0),
    default=None,
    help=f"How long a holding's activity lease lasts without renewal (default {LEASE_SECONDS:g}).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve the worker's Prometheus metrics on this port.",
)
def worker(threads: int, lease_seconds: float | None, metrics_port: int | None) -> None:
    """Process inbox deliveries, poll the gateway and store what it says, until stopped."""
    from workers import StopSignal

    stop = StopSignal()
    settings = settings_or_exit(serves=True)
    if metrics_port is not None:
        ensure_port_free("0.0.0.0", metrics_port, option="--metrics-port")
    require_redis_or_exit(settings)
    serving_store_or_exit(settings)
    _serve_metrics(metrics_port)
    try:
        if settings.broker.redis_url is None:
            from workers import start_embedded

            click.echo(
                "REDIS_URL is unset: running workers and scheduler in this process", err=True
            )
            embedded = start_embedded(settings, threads=threads, lease_seconds=lease_seconds)
            stop.wait()
            embedded.stop()
            return
        from workers import start_worker

        running = start_worker(settings, threads=threads, lease_seconds=lease_seconds)
    except ConfigError as exc:
        fail(str(exc))
    stop.wait()
    running.stop()


@click.command()
@click.option(
    "--lock-seconds",
    type=click.FloatRange(min=1.0),
    default=None,
    help="How long the singleton lock outlives a scheduler that stopped renewing "
    f"(default {LOCK_SECONDS:g}).",
)
def scheduler(lock_seconds: float | None) -> None:
    """Send the periodic ticks (one active scheduler at a time), until stopped."""
    from workers import StopSignal

    stop = StopSignal()
    settings = settings_or_exit(serves=True)
    if settings.broker.redis_url is None:
        fail(
            "REDIS_URL is unset: without Redis the scheduler runs inside `recon web` or "
            "`recon worker`; set REDIS_URL to run it as its own process"
        )
    require_redis_or_exit(settings)
    serving_store_or_exit(settings)
    from workers import (
        RedisSchedulerLock,
        TickScheduler,
        configured_ticks,
        install_broker,
        worker_identity,
    )

    install_broker(settings.broker.redis_url)
    seconds = lock_seconds or LOCK_SECONDS
    ticks = TickScheduler(
        configured_ticks(settings),
        RedisSchedulerLock(settings.broker.redis_url, worker_identity("scheduler"), seconds),
        lock_seconds=seconds,
    )
    ticks.start()
    stop.wait()
    ticks.stop()


def _serve_metrics(port: int | None) -> None:
    if port is None:
        return
    from prometheus_client import start_http_server

    from workers import REGISTRY

    start_http_server(port, addr="0.0.0.0", registry=REGISTRY)


COMMANDS = [worker, scheduler]
