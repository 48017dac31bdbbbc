"""The worker processes: the broker, thin actors over `reconciliation`, the scheduler.

The names below are what the roof (`recon`) uses to start and stop them; it imports them from
here, never from a module behind this file (an import-linter contract holds it), so a module
moved or split here changes no caller. `workers.broker` comes first: importing it installs the
in-process broker every actor is declared on. Modules of workers import each other's leaves,
never this file, which would make a circle.
"""

from workers.broker import BrokerUnreachableError, install_broker, require_redis
from workers.dispatch import send_process_delivery
from workers.embedded import EmbeddedWorkers, start_embedded
from workers.middleware.metrics import REGISTRY
from workers.runtime import Runtime, build_runtime, release_runtime, worker_identity
from workers.scheduler import TickScheduler, configured_ticks
from workers.scheduler_lock import LOCK_SECONDS, RedisSchedulerLock
from workers.stop_signal import StopSignal
from workers.worker_process import start_worker

__all__ = [
    "LOCK_SECONDS",
    "REGISTRY",
    "BrokerUnreachableError",
    "EmbeddedWorkers",
    "RedisSchedulerLock",
    "Runtime",
    "StopSignal",
    "TickScheduler",
    "build_runtime",
    "configured_ticks",
    "install_broker",
    "release_runtime",
    "require_redis",
    "send_process_delivery",
    "start_embedded",
    "start_worker",
    "worker_identity",
]
