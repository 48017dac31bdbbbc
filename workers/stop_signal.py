"""SIGTERM and SIGINT as an event to wait on, for `recon worker` and `recon scheduler`.

A module of its own with nothing heavy to import, so a process installs its handlers before the
slow part of its start-up: a stop that arrives while it is still starting is then honoured like
any other (start-up finishes, everything stops cleanly, exit status 0) instead of killing it
half-started.
"""

from __future__ import annotations

import signal
import threading
from typing import Final

import structlog

log = structlog.get_logger(__name__)

#: Set once this process has been asked to stop. Long-running work (an activity catch-up)
#: checks it between steps and ends early, giving back its leases, instead of holding them
#: until the worker's stop timeout or until they expire.
_stopping: Final = threading.Event()


def stopping() -> bool:
    """Whether this process is stopping (a signal arrived, or a worker is being stopped)."""
    return _stopping.is_set()


def mark_stopping(stop: bool = True) -> None:
    """Say the process is stopping (True) or, when a worker starts again in it, not (False)."""
    if stop:
        _stopping.set()
    else:
        _stopping.clear()


class StopSignal:
    """SIGTERM and SIGINT (the Procfile's stop, or Ctrl-C) turned into an event to wait on.

    Installed first thing, before the slow start-up, so a stop that arrives while the process
    is still starting is honoured the same way: start-up finishes, then everything stops cleanly.
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("process.stopping", signal=signal.Signals(signum).name)
        mark_stopping()
        self._stop.set()

    def arrived(self) -> bool:
        """Whether a stop signal has arrived (without waiting)."""
        return self._stop.is_set()

    def wait(self) -> None:
        """Block until a stop signal has arrived (at once if one already has)."""
        while not self._stop.wait(1.0):
            pass
