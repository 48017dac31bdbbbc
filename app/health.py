"""Liveness, readiness, each part's state, and Prometheus metrics.

Three probes, three questions (docs/operations.md says what a load balancer does with each):

- `/health`: is the process serving at all? Restart it when this fails.
- `/ready`: can this process accept deliveries *now*? The store takes a write within a short
  bound (a lock on the inbox, a read-only or deleted SQLite file, a dead database all fail
  it) and the receiver holds a usable signing secret. Route deliveries elsewhere meanwhile.
  Redis is deliberately not part of it: a delivery is acknowledged once committed, and the
  sweep enqueues it when the broker is back, so turning traffic away for a broker outage would
  refuse deliveries this process could have kept safe.
- `/health/parts`: each part on its own (store reachable, store writable, signing secret,
  broker), for a person or a monitor; 503 when any part is down.

All are unauthenticated and say only up or down, with an exception's class name at most.
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
from app.signing_keys import SigningKeys
from app.write_probe import store_accepts_writes
from reconciliation.notifications import inbox_depth
from reconciliation.store import transaction

#: Seconds a readiness probe waits for Redis.
BROKER_TIMEOUT_SECONDS: Final = 2.0
#: Seconds the write probe may wait for the inbox's write lock: short, because a probe that
#: waits as long as a stuck delivery would tell the load balancer too late.
WRITE_PROBE_SECONDS: Final = 2.0
#: What a part reports when it is fine.
OK: Final = "ok"

log = structlog.get_logger(__name__)


class Readiness(msgspec.Struct):
    """Whether deliveries can be accepted now, and the two things that decide it."""

    ready: bool
    store: str
    secret: str


class Parts(msgspec.Struct):
    """Each part's state: "ok", or what failed (an exception class name, no detail)."""

    ok: bool
    database: str
    store_writable: str
    secret: str
    broker: str


@get("/health", sync_to_thread=False, tags=["operations"])
def health() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": OK}


@get("/ready", sync_to_thread=True, tags=["operations"])
def ready(state: State) -> Response[Readiness]:
    """200 when a delivery arriving now would be verified and committed; 503 otherwise."""
    store = _check_writable(state)
    secret = _check_secret(state)
    result = Readiness(ready=store == secret == OK, store=store, secret=secret)
    return Response(result, status_code=200 if result.ready else 503)


@get("/health/parts", sync_to_thread=True, tags=["operations"])
def parts(state: State) -> Response[Parts]:
    """Every part's state; 503 when any is down (not for a load balancer: see /ready)."""
    found = Parts(
        ok=False,
        database=_check_database(state),
        store_writable=_check_writable(state),
        secret=_check_secret(state),
        broker=_check_broker(state[state_keys.BROKER_URL]),
    )
    found.ok = all(
        v == OK for v in (found.database, found.store_writable, found.secret, found.broker)
    )
    return Response(found, status_code=200 if found.ok else 503)


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
    return OK


def _check_writable(state: State) -> str:
    problem = store_accepts_writes(
        state[state_keys.ENGINE], state.get(state_keys.COMMIT_BOUND_SECONDS, WRITE_PROBE_SECONDS)
    )
    if problem is None:
        return OK
    log.warning("ready.store_not_writable", problem=problem)
    return f"not writable ({problem})"


def _check_secret(state: State) -> str:
    keys: SigningKeys = state[state_keys.SIGNING_KEYS]
    if keys.usable:
        return OK
    if keys.undecryptable:
        return "none usable (RECON_SECRET_KEY cannot decrypt the stored secret)"
    return "none yet (registration pending and RECON_WEBHOOK_SECRETS unset)"


def _check_broker(broker_url: str | None) -> str:
    if broker_url is None:
        return OK  # the in-process broker is ready whenever this process is
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
    return OK


ROUTE_HANDLERS: Final = [health, ready, parts, prometheus_metrics]
