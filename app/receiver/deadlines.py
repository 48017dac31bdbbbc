"""Deadlines for the receiver's waits, one timer per event loop instead of one per request.

Every delivery waits twice with a bound: for its body (RECON_WEBHOOK_BODY_TIMEOUT_SECONDS) and
for its batch's commit (RECON_WEBHOOK_COMMIT_TIMEOUT_SECONDS). A cancel scope per wait
(`anyio.fail_after`) or `asyncio.wait_for` costs more than verifying the signature
(docs/decisions.md, "Figures behind the code's choices"). Here a wait costs a dictionary entry: all
deadlines of one `TaskDeadlines` are the same length, so the entries, kept in the order they
were armed, are also in the order they expire, and a single timer set for the first of them
cancels the tasks whose deadline passed (as `asyncio.timeout` would) and sets itself again.

The caller tells its own expiry from any other cancellation:

    token = deadlines.arm()
    try:
        await something()
    except asyncio.CancelledError:
        if not deadlines.expired(token):
            raise
        ...  # the deadline passed: answer accordingly
    finally:
        deadlines.disarm(token)
"""

from __future__ import annotations

import asyncio
from typing import Final

#: Seconds a deadline may be honoured early: an event loop's timer can fire a clock tick
#: before the time it was set for, and re-arming it for a millisecond would only spin.
CLOCK_SLACK_SECONDS: Final = 0.001

Token = asyncio.Task[object]


class _LoopDeadlines:
    """The armed deadlines of one event loop and the timer for the first of them."""

    __slots__ = ("armed", "expired", "loop", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # Task -> deadline (loop time); insertion order is expiry order.
        self.armed: dict[Token, float] = {}
        self.expired: set[Token] = set()
        self.timer: asyncio.TimerHandle | None = None


class TaskDeadlines:
    """Cancels a waiting task once `seconds` passed since it armed its deadline."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._loops: dict[asyncio.AbstractEventLoop, _LoopDeadlines] = {}

    @property
    def seconds(self) -> float:
        return self._seconds

    def arm(self) -> Token:
        """Start the current task's deadline; the token is the task (one wait at a time)."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("TaskDeadlines.arm() must run inside an asyncio task")
        loop = task.get_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopDeadlines(loop)
        deadline = loop.time() + self._seconds
        state.armed[task] = deadline
        if state.timer is None:
            state.timer = loop.call_at(deadline, self._expire, state)
        return task

    def expired(self, token: Token) -> bool:
        """Whether the task was cancelled because its deadline passed (call on CancelledError).

        The task's cancellation is withdrawn (`uncancel`) when the deadline was the only
        reason for it; another cancellation of the same task stays in force and says False.
        """
        state = self._loops.get(token.get_loop())
        if state is None or token not in state.expired:
            return False
        state.expired.discard(token)
        return token.uncancel() == 0

    def disarm(self, token: Token) -> None:
        """Stop the deadline (idempotent). The timer stays set: it costs nothing to let it fire,
        and most waits end before it would, so setting and cancelling one per wait is avoided."""
        state = self._loops.get(token.get_loop())
        if state is not None and state.armed.pop(token, None) is None:
            state.expired.discard(token)

    def _expire(self, state: _LoopDeadlines) -> None:
        """Cancel every task whose deadline passed, then set the timer for the next one."""
        state.timer = None
        limit = state.loop.time() + CLOCK_SLACK_SECONDS
        armed = state.armed
        while armed:
            task = next(iter(armed))
            deadline = armed[task]
            if deadline > limit:
                state.timer = state.loop.call_at(deadline, self._expire, state)
                return
            del armed[task]
            state.expired.add(task)
            task.cancel()
        if not state.expired and self._loops.get(state.loop) is state:
            del self._loops[state.loop]  # idle: a loop that closed is not kept alive here
