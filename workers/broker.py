"""The Dramatiq broker: built here, installed before any actor is declared or a message sent.

Redis when REDIS_URL is set (every process on one Redis shares the queues), Dramatiq's
in-process StubBroker otherwise (the embedded default: web, worker and scheduler in one
process). The same actors run on either.

Importing this module installs an in-process broker so that actor modules can always be
imported (tests, tooling, `recon --help`); each process then calls `install_broker(settings)`
at start-up, which builds the configured broker and moves every declared actor onto it.
Configuration comes from `Settings` only, never from os.environ directly.

Middleware, in order: MemoryTrim (first, so its after-hook runs last: Dramatiq runs them in
reverse; the message's time, log lines and retry are settled before memory is given back),
TimeLimit (no message runs forever), Retries (limits chosen per actor; the default here is small
so nothing retries for days by accident), structlog context and Prometheus metrics
(workers.middleware).
"""

from __future__ import annotations

import threading
from typing import Final

import dramatiq
from dramatiq import Broker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Middleware, Retries, TimeLimit

from workers.middleware.memory_trim import MemoryTrim
from workers.middleware.metrics import WorkerMetrics
from workers.middleware.structlog_context import StructlogContext

#: Retries of an actor that does not choose its own: few and quick. Work that must not be
#: lost is re-enqueued from the store by the sweep, not by retrying a message for days.
DEFAULT_MAX_RETRIES: Final = 3
DEFAULT_MIN_BACKOFF_MS: Final = 1_000
DEFAULT_MAX_BACKOFF_MS: Final = 60_000

#: Longest a message may run unless its actor says otherwise.
DEFAULT_TIME_LIMIT_MS: Final = 5 * 60_000

#: Key prefix of the queues in Redis, so recon can share a Redis with other applications.
REDIS_NAMESPACE: Final = "recon"

#: Seconds a process gives Redis to answer at start-up. A local or same-datacentre Redis
#: answers in milliseconds; a few seconds covers a slow network without leaving an operator
#: staring at a process that neither works nor says why.
REDIS_ANSWER_TIMEOUT_SECONDS: Final = 3.0


class BrokerUnreachableError(Exception):
    """Redis at REDIS_URL does not answer; the message names it (password masked)."""


class _Installed:
    """What this process installed: any broker yet, the configured one yet, on which Redis."""

    lock = threading.Lock()
    any = False
    configured = False
    redis_url: str | None = None


def build_middleware() -> list[Middleware]:
    """A fresh middleware stack (each broker needs its own instances)."""
    return [
        MemoryTrim(),
        TimeLimit(time_limit=DEFAULT_TIME_LIMIT_MS),
        Retries(
            max_retries=DEFAULT_MAX_RETRIES,
            min_backoff=DEFAULT_MIN_BACKOFF_MS,
            max_backoff=DEFAULT_MAX_BACKOFF_MS,
        ),
        StructlogContext(),
        WorkerMetrics(),
    ]


def build_broker(redis_url: str | None) -> Broker:
    """RedisBroker on `redis_url`, or a StubBroker when it is None."""
    if redis_url is None:
        return StubBroker(middleware=build_middleware(), fail_fast_default=False)
    return RedisBroker(  # type: ignore[no-untyped-call]
        url=redis_url, middleware=build_middleware(), namespace=REDIS_NAMESPACE
    )


def require_redis(redis_url: str, timeout: float = REDIS_ANSWER_TIMEOUT_SECONDS) -> None:
    """Raise BrokerUnreachableError unless Redis answers a PING within `timeout` seconds.

    Every process on Redis calls this first: without it a worker waits on a dead broker in
    silence, and a web process starts, answers 503 on /ready and never says why.
    """
    import redis

    from foundation import mask_url_password, redact_text

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    except redis.RedisError as exc:
        reason = redact_text(str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        raise BrokerUnreachableError(
            f"Redis at {mask_url_password(redis_url)} does not answer "
            f"({reason or type(exc).__name__}): start it, or fix REDIS_URL"
        ) from None
    finally:
        client.close()


def install_broker(redis_url: str | None, *, placeholder: bool = False) -> Broker:
    """Make a new broker the global one and move every declared actor onto it.

    A fresh broker each time (rather than reusing one) keeps a stopped Worker's middleware and
    queues from leaking into the next one, which matters for tests and the embedded runner.
    """
    with _Installed.lock:
        previous = dramatiq.get_broker() if _Installed.any else None
        broker = build_broker(redis_url)
        dramatiq.set_broker(broker)
        if previous is not None:
            for declared in list(previous.actors.values()):
                declared.broker = broker
                broker.declare_actor(declared)
        _Installed.any = True
        _Installed.redis_url = redis_url
        _Installed.configured = _Installed.configured or not placeholder
        return broker


def current_broker() -> Broker:
    """The installed broker."""
    return dramatiq.get_broker()


def ensure_configured() -> Broker:
    """The configured broker; installs it from the environment if only the placeholder is in.

    For code that sends messages from a process whose entry point did not install a broker
    (a web process started by another tool, a script): sending to the placeholder would keep
    the message in this process only.
    """
    with _Installed.lock:
        configured = _Installed.configured
    if configured:
        return current_broker()
    from foundation import load_settings

    return install_broker(load_settings().broker.redis_url)


def boot(broker: Broker) -> None:
    """Tell the middleware the process has booted (TimeLimit starts its watchdog here).

    Dramatiq's own CLI emits this; `recon worker` and the embedded runner start their Worker
    themselves, so they call this once per broker.
    """
    if getattr(broker, "_recon_booted", False):
        return
    broker.emit_after("process_boot")
    setattr(broker, "_recon_booted", True)  # noqa: B010 - a marker on a foreign object


def declared_actor_names(broker: Broker) -> list[str]:
    """Names of the actors declared on `broker` (for start-up logs and tests)."""
    return sorted(broker.actors)


def _install_placeholder() -> None:
    if not _Installed.any:
        install_broker(None, placeholder=True)


_install_placeholder()
