"""How often the ticks whose pace the budget depends on run: shared by the scheduler (which
sends them) and the actors (which size what one tick may send by it)."""

from __future__ import annotations

from typing import Final

from foundation import Settings

#: The activity tick runs this many times per poll interval (a holding becomes due at its own
#: time; checking only once per interval would add up to a whole interval of delay).
ACTIVITY_CHECKS_PER_INTERVAL: Final = 4


def activity_tick_seconds(settings: Settings) -> float:
    """How often due activity reads are chosen and sent."""
    return min(
        settings.schedules.poll_activity_seconds,
        max(1.0, settings.schedules.poll_activity_seconds / ACTIVITY_CHECKS_PER_INTERVAL),
    )
