"""The scheduler: periodic ticks that enqueue work, from one process at a time.

APScheduler (as Dramatiq's docs recommend) runs one interval job per tick; each job only sends
a small message, and the workers look at the store to decide what is due. Intervals come from
the configuration (RECON_*_SECONDS). Every process may run a scheduler (the embedded default
does, and `recon scheduler` may be scaled for availability); a lock (workers.scheduler_lock)
lets only its holder send, and the others stand by, retrying the lock every few seconds.

A tick that cannot be sent (Redis restarting) is logged and skipped: the next one comes soon
and the store still knows what is due.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from apscheduler.schedulers.background import BackgroundScheduler

from foundation import Settings
from workers.scheduler_lock import LOCK_SECONDS, SchedulerLock
from workers.tick_intervals import activity_tick_seconds

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Tick:
    """A periodic message: its name, how often, and how to send it."""

    name: str
    seconds: float
    send: Callable[[], Any]


def configured_ticks(settings: Settings) -> list[Tick]:
    """Every tick, with its interval from the configuration."""
    from workers.actors import (
        audit_ledger,
        check_subscription,
        discover_holdings,
        enqueue_activity_polls,
        poll_transfers,
        prune,
        reconcile,
        snapshot_balances,
        sweep,
    )

    activity = activity_tick_seconds(settings)
    return [
        Tick(
            "discover_holdings",
            settings.schedules.discover_holdings_seconds,
            discover_holdings.send,
        ),
        Tick("poll_activity", activity, enqueue_activity_polls.send),
        Tick("poll_transfers", settings.schedules.poll_transfers_seconds, poll_transfers.send),
        Tick(
            "snapshot_balances",
            settings.schedules.snapshot_balances_seconds,
            snapshot_balances.send,
        ),
        Tick(
            "check_subscription",
            settings.schedules.check_subscription_seconds,
            check_subscription.send,
        ),
        Tick("sweep", settings.schedules.sweep_seconds, sweep.send),
        Tick("reconcile", settings.schedules.reconcile_seconds, reconcile.send),
        Tick("prune", settings.retention.run_seconds, prune.send),
        Tick("audit_ledger", settings.schedules.audit_seconds, audit_ledger.send),
    ]


class TickScheduler:
    """Sends the ticks while holding the lock; stands by otherwise."""

    def __init__(
        self,
        ticks: list[Tick],
        lock: SchedulerLock,
        *,
        lock_seconds: float = LOCK_SECONDS,
    ) -> None:
        self._ticks = ticks
        self._lock = lock
        self._renew_seconds = max(0.2, lock_seconds / 3)
        self._active = threading.Event()
        self._sent: Counter[str] = Counter()
        self._scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30},
        )

    @property
    def active(self) -> bool:
        """True while this process holds the lock and sends ticks."""
        return self._active.is_set()

    def ticks_sent(self, name: str) -> int:
        """How many times this scheduler has sent the tick `name` (a start-up tick has run once
        this is 1 and the workers are idle: what a test or a health check waits for)."""
        return self._sent[name]

    def start(self) -> None:
        """Take (or wait for) the lock and start the interval jobs; returns at once."""
        now = datetime.now(UTC)
        self._renew()
        self._scheduler.add_job(self._renew, "interval", seconds=self._renew_seconds, id="lock")
        for tick in self._ticks:
            self._scheduler.add_job(
                self._sender(tick),
                "interval",
                seconds=tick.seconds,
                id=tick.name,
                next_run_time=now,
            )
        self._scheduler.start()
        log.info(
            "scheduler.started",
            active=self.active,
            ticks={t.name: t.seconds for t in self._ticks},
        )

    def stop(self) -> None:
        """Stop sending and give the lock up so a standby takes over at once."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
        self._active.clear()
        self._lock.release()
        log.info("scheduler.stopped")

    def _renew(self) -> None:
        held = self._lock.hold()
        if held and not self._active.is_set():
            log.info("scheduler.lock_taken")
            self._active.set()
            # Run every tick now rather than waiting up to a whole interval after a takeover.
            if self._scheduler.running:
                for job in self._scheduler.get_jobs():
                    if job.id != "lock":
                        job.modify(next_run_time=datetime.now(UTC))
        elif not held and self._active.is_set():
            log.warning("scheduler.lock_lost")
            self._active.clear()

    def _sender(self, tick: Tick) -> Callable[[], None]:
        def send() -> None:
            if not self._active.is_set():
                return
            try:
                tick.send()
                self._sent[tick.name] += 1
            except Exception as exc:  # noqa: BLE001 - the next tick comes soon
                log.warning("scheduler.tick_failed", tick=tick.name, error=type(exc).__name__)

        return send
