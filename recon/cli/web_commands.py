"""`recon web`: the web process (receiver, inbox API, health, metrics) under uvicorn.

Without REDIS_URL (the embedded default) the same process also runs the workers and the
scheduler on the in-process broker, unless `--no-workers` says another process does.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import Final

import click

from foundation import ConfigError, Settings
from recon.cli.startup import (
    ensure_port_free,
    fail,
    require_redis_or_exit,
    serving_store_or_exit,
    settings_or_exit,
    with_secret_keys,
)

#: Garbage-collector thresholds of the web process. Every request allocates a few hundred
#: short-lived objects; collecting the youngest generation every 700 (the default) costs
#: throughput, and full collections walking the app's large, permanent object graph (frozen
#: at start-up, below) cost latency spikes (docs/decisions.md, "Figures behind the code's
#: choices").
GC_THRESHOLDS: Final = (50_000, 20, 100)


def tune_garbage_collector() -> None:
    """Freeze what start-up built, and collect the young generation less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def delivery_enqueue(
    settings: Settings, *, workers_in_process: bool = False
) -> Callable[[Sequence[int]], None] | None:
    """How a process hands committed deliveries to the workers, or None when it cannot.

    With Redis, and with the embedded workers running in this very process, through the
    workers' dispatcher; it raises when the broker refuses, so that the caller (the receiver's
    relay, a CLI replay) can count and report it. Without Redis and without local workers an
    in-process queue would have no consumer: None, and the workers' sweep finds the pending
    rows instead.
    """
    if settings.broker.embedded and not workers_in_process:
        return None
    from workers import send_process_delivery

    return send_process_delivery


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=int, default=None, help="TCP port (default: $PORT, else 8000).")
@click.option(
    "--register/--no-register",
    default=True,
    show_default=True,
    help="Register the webhook at the company API in the background at start-up.",
)
@click.option(
    "--workers/--no-workers",
    default=True,
    show_default=True,
    help="Without REDIS_URL: also run the workers and the scheduler in this process.",
)
def web(host: str, port: int | None, register: bool, workers: bool) -> None:
    """Serve the webhook receiver, the inbox API, /health, /ready, /metrics and /schema."""
    from workers import StopSignal

    # Installed before anything slow, and before uvicorn: uvicorn takes SIGTERM/SIGINT while it
    # serves, shuts down gracefully, then restores the handler it found and raises the signal
    # again. With the default handler found, that second raise killed the process before the
    # `finally` below could stop the embedded workers (their in-flight messages cut, not
    # finished); with this one it only marks the process stopping, and the stop completes.
    stop = StopSignal()
    # The cheap checks come first: a port in use or a dead Redis must be one line within
    # seconds, not a failure after the workers started and the webhook registration began.
    settings = settings_or_exit(serves=True)
    ensure_port_free(host, port or settings.web.port)
    require_redis_or_exit(settings)
    serving_store_or_exit(settings)
    settings = with_secret_keys(settings)

    from app.client_addresses import forwarded_clients
    from app.main import create_app
    from recon.cli.http_protocol import serve

    embedded = None
    if settings.broker.embedded and workers:
        from workers import start_embedded

        embedded = start_embedded(settings)
    try:
        try:
            app = create_app(
                settings,
                enqueue=delivery_enqueue(settings, workers_in_process=embedded is not None),
                self_register=register,
            )
        except ConfigError as exc:
            fail(str(exc))
        tune_garbage_collector()
        if stop.arrived():
            return  # told to stop while starting: the embedded workers stop below
        serve(
            forwarded_clients(app, settings.web.trusted_proxies),
            host,
            port or settings.web.port,
            parser=settings.web.http_parser,
            timeout_graceful_shutdown=20,
            # Bounds on what clients may hold (docs/operations.md): past the limit a new
            # request is answered 503 at once; an idle keep-alive connection is closed.
            limit_concurrency=settings.web.max_connections,
            timeout_keep_alive=settings.web.keep_alive_seconds,
            # X-Forwarded-For is read by recon itself (app.client_addresses), which keeps the
            # peer beside the forwarded address; uvicorn's reading would replace it.
            proxy_headers=False,
        )
    finally:
        if embedded is not None:
            embedded.stop()


COMMANDS = [web]
