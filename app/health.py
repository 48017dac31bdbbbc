"""Liveness, readiness and Prometheus metrics.

`/health` says the process serves requests; a load balancer restarts it when it stops. `/ready`
says it can do its job: the database answers and so does the broker; a load balancer routes
deliveries elsewhere meanwhile. Both are unauthenticated and reveal nothing but up/down.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import structlog
from litestar import Response, get
from litestar.datastructures import State
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from app import metrics, state_keys
from reconciliation.notifications.inbox import inbox_depth
from reconciliation.store.db import transaction

#: Seconds a readiness probe waits for Redis.
BROKER_TIMEOUT_SECONDS: Final = 2.0

log = structlog.get_logger(__name__)


class Readiness(msgspec.Struct):
    """Each dependency's state: "ok", or what failed (an exception class name, no detail)."""

    ready: bool
    database: str
    broker: str


@get("/health", sync_to_thread=False, tags=["operations"])
def health() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": "ok"}


@get("/ready", sync_to_thread=True, tags=["operations"])
def ready(state: State) -> Response[Readiness]:
    """200 when the database and the broker answer, 503 (naming which does not) otherwise."""
    database = _check_database(state)
    broker = _check_broker(state[state_keys.BROKER_URL])
    result = Readiness(ready=database == broker == "ok", database=database, broker=broker)
    return Response(result, status_code=200 if result.ready else 503)


@get("/metrics", sync_to_thread=True, media_type=CONTENT_TYPE_LATEST, tags=["operations"])
def prometheus_metrics(state: State) -> Response[bytes]:
    """Prometheus exposition; the inbox depth is counted now, at scrape time."""
    try:
        with transaction(state[state_keys.SESSION_FACTORY]) as session:
            depth = inbox_depth(session)
    except Exception as exc:  # noqa: BLE001 - the other metrics are still worth serving
        log.warning("metrics.inbox_depth_failed", error=type(exc).__name__)
    else:
        for inbox_state, count in depth.items():
            metrics.INBOX_DEPTH.labels(inbox_state).set(count)
    return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)


def _check_database(state: State) -> str:
    try:
        with transaction(state[state_keys.SESSION_FACTORY]) as session:
            session.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        log.warning("ready.database_unavailable", error=type(exc).__name__)
        return f"unavailable ({type(exc).__name__})"
    return "ok"


def _check_broker(broker_url: str | None) -> str:
    if broker_url is None:
        return "ok"  # the in-process broker is ready whenever this process is
    import redis

    client: Any = redis.Redis.from_url(
        broker_url,
        socket_connect_timeout=BROKER_TIMEOUT_SECONDS,
        socket_timeout=BROKER_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        log.warning("ready.broker_unavailable", error=type(exc).__name__)
        return f"unavailable ({type(exc).__name__})"
    finally:
        client.close()
    return "ok"


ROUTE_HANDLERS: Final = [health, ready, prometheus_metrics]
