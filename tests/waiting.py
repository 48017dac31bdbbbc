"""The suite's one way to wait: poll a condition until it holds, or fail saying what did not.

A fixed sleep either wastes time (the condition held long before) or flakes (on a loaded machine
it had not yet); a poll with a deadline does neither. Where time itself must pass, a test moves
an injected clock (`tests.clocks`) instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine, text

T = TypeVar("T")

#: How often a condition is asked again: quick enough to add little to a test, slow enough that
#: asking (a query, a file read) costs the machine little.
POLL_SECONDS = 0.05


def wait_until(
    condition: Callable[[], T], *, seconds: float = 30.0, what: str = "the condition"
) -> T:
    """`condition()`'s first truthy answer; AssertionError naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not (answer := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
        time.sleep(POLL_SECONDS)
    return answer


def another_session(engine: Engine, where: str) -> bool:
    """Whether another session of `engine`'s PostgreSQL database matches `where`, a condition
    on pg_stat_activity (a lock it waits for, the query it last sent).

    Asked on a connection of its own each time: within one transaction pg_stat_activity answers
    from a snapshot taken at its first read, so a session already in a transaction would never
    see the other one change.
    """
    with engine.connect() as observer:
        found = observer.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                f"AND pid <> pg_backend_pid() AND ({where})"
            )
        ).scalar_one()
    return bool(found)
