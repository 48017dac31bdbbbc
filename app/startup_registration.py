"""Self-registration at start-up, in the background, retried until it succeeds.

The receiver must answer at once (the provider may be retrying deliveries right now), so the
registration never blocks start-up, and its failure (provider down, bad credentials) is logged
and retried with a growing pause, never fatal: deliveries to an existing webhook keep working.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

import structlog

from reconciliation.notifications import RegistrationBusyError, RegistrationResult

#: Pause after the first failure; doubled after each further failure up to the cap.
FIRST_RETRY_SECONDS: Final = 2.0
#: Longest pause between two attempts.
MAX_RETRY_SECONDS: Final = 300.0
#: Pause when another process holds the lease (it will have registered by then).
BUSY_RETRY_SECONDS: Final = 3.0

log = structlog.get_logger(__name__)


class StartupRegistration:
    """Runs `attempt` in a thread until it returns, then calls `on_registered` once."""

    def __init__(
        self,
        attempt: Callable[[], RegistrationResult],
        on_registered: Callable[[RegistrationResult], None],
    ) -> None:
        self._attempt = attempt
        self._on_registered = on_registered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.result: RegistrationResult | None = None

    def start(self) -> None:
        """Start trying in the background."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="webhook-registration", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop retrying (an attempt in flight finishes on its own; the thread is a daemon)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
            self._thread = None

    def wait(self, timeout: float) -> RegistrationResult | None:
        """Block until registered or `timeout` passes (for tests and `recon web` diagnostics)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.result

    def _run(self) -> None:
        pause = FIRST_RETRY_SECONDS
        while not self._stop.is_set():
            try:
                result = self._attempt()
            except RegistrationBusyError:
                self._stop.wait(BUSY_RETRY_SECONDS)
                continue
            except Exception as exc:  # noqa: BLE001 - never fatal: log, wait, try again
                log.warning(
                    "webhook.registration_failed",
                    error=type(exc).__name__,
                    reason=str(exc),
                    retry_in_seconds=pause,
                )
                self._stop.wait(pause)
                pause = min(pause * 2, MAX_RETRY_SECONDS)
                continue
            self.result = result
            self._on_registered(result)
            return
