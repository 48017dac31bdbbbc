"""Log lines that stay few when the same thing happens thousands of times a second.

Three shapes of flood, three answers:

- `PerReasonLimit`: a stream of events anyone can cause (refused webhook requests). One line
  per reason per interval; the next line that is written says how many were left out, so the
  log still counts every event while its size is bounded by the number of reasons, not by the
  sender's rate.
- `OutageLog`: a dependency that is down (Redis during a restart). One line when it starts
  failing, one line when it works again saying how long and how many calls failed, instead
  of a warning per call (about 2,900 of them in a 20 s Redis restart).
- `IntervalSummary`: a routine round that runs every few seconds (the transfer poll every 2 s,
  the activity tick every 5 s). Each round is a debug line; one info line per interval carries
  the totals of the rounds since the last one. A line per round was 80% of the worker's info
  log in the soak (1.2 MB/h at 8 events/s, over the 1 MB/h goal).

Both are safe to call from several threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Final

#: Seconds between two lines of the same reason.
DEFAULT_INTERVAL_SECONDS: Final = 1.0

#: Seconds between two summary lines of a routine round: a minute keeps a round that runs every
#: 2 s to 60 lines an hour (about 20 KB) while an operator tailing the log still sees it move.
SUMMARY_INTERVAL_SECONDS: Final = 60.0


class PerReasonLimit:
    """Decides whether an event of a given reason may be logged now, and counts the rest."""

    def __init__(
        self,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        # reason -> (when its last line was written, events left out since)
        self._state: dict[str, tuple[float, int]] = {}

    def admit(self, reason: str) -> int | None:
        """None: leave this event out (it is counted). Otherwise log it now, and the number
        returned is how many events of this reason were left out since the previous line."""
        now = self._monotonic()
        with self._lock:
            last, suppressed = self._state.get(reason, (float("-inf"), 0))
            if now - last < self._interval:
                self._state[reason] = (last, suppressed + 1)
                return None
            self._state[reason] = (now, 0)
            return suppressed


class OutageLog:
    """One line when calls start failing, one when they succeed again.

    `log` is a structlog logger (or anything with `warning` and `info` taking keyword fields).
    """

    def __init__(
        self,
        log: Any,
        failed_event: str,
        recovered_event: str,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._failed_event = failed_event
        self._recovered_event = recovered_event
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0
        self._items = 0

    @property
    def failing(self) -> bool:
        """True between a failure and the next success."""
        return self._since is not None

    def failed(self, error: BaseException, items: int = 1, **fields: object) -> None:
        """Note a failed call; the first of an outage is logged (error class and fields)."""
        with self._lock:
            first = self._since is None
            if first:
                self._since = self._monotonic()
            self._failures += 1
            self._items += items
        if first:
            self._log.warning(
                self._failed_event,
                error=type(error).__name__,
                detail=str(error)[:300],
                **fields,
            )

    def succeeded(self) -> None:
        """Note a successful call; the first after an outage logs how long it lasted."""
        with self._lock:
            since, failures, items = self._since, self._failures, self._items
            if since is None:
                return
            self._since, self._failures, self._items = None, 0, 0
        self._log.info(
            self._recovered_event,
            outage_seconds=round(self._monotonic() - since, 1),
            failed_calls=failures,
            items=items,
        )


class IntervalSummary:
    """Totals of a frequent round, written at info once per interval.

    `add` takes the round's counts: the round itself is a debug line, and the first round
    after `interval_seconds` have passed since the last summary writes one info line with the
    totals since then and the number of rounds they cover. The very first round is summarised
    at once, so a process that has just started shows in the log that its rounds run. Rounds
    that stop leave their last totals unwritten until the next one; nothing here runs a timer.
    """

    def __init__(
        self,
        log: Any,
        event: str,
        interval_seconds: float = SUMMARY_INTERVAL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._event = event
        self._interval = interval_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last = float("-inf")
        self._rounds = 0
        self._totals: dict[str, int] = {}

    def add(self, **counts: int) -> None:
        """Count one round; write the summary if its interval has passed."""
        self._log.debug(self._event, **counts)
        now = self._monotonic()
        with self._lock:
            self._rounds += 1
            for name, value in counts.items():
                self._totals[name] = self._totals.get(name, 0) + value
            if now - self._last < self._interval:
                return
            rounds, totals = self._rounds, self._totals
            self._last, self._rounds, self._totals = now, 0, {}
        self._log.info(f"{self._event}.summary", rounds=rounds, **totals)
