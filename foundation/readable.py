"""Times and names as a person reads them: the human half of what the store keeps exactly.

The store and the wire keep aware UTC datetimes with microseconds and snake_case states, which
is right for machines. A person reading a report, a terminal or an alert subject needs
'2026-11-23 20:13:50 UTC', '3 min ago' and 'awaiting finality'. Every human surface goes
through these functions (money has its own, `foundation.money.format_money`), so the same
moment or state never reads two ways.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

#: Seconds per unit, largest first, for `time_ago`: a person wants one rough unit, not four.
AGE_UNITS: Final = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))


def moment(value: datetime | None, *, missing: str = "never") -> str:
    """'2026-11-23 20:13:50 UTC': to the second, always UTC, never microseconds.

    A naive datetime is taken to be UTC already (the store only holds UTC); None reads as
    `missing`, so a column of times never shows 'None'.
    """
    if value is None:
        return missing
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_ago(value: datetime, now: datetime) -> str:
    """'3 min ago', '2 h ago', '5 d ago', 'just now'; 'in 4 min' for a moment still ahead."""
    seconds = int((now - value).total_seconds())
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 1:
        return "just now"
    for unit, size in AGE_UNITS:
        if seconds >= size:
            count = seconds // size
            return f"in {count} {unit}" if ahead else f"{count} {unit} ago"
    return "just now"  # unreachable: the last unit is one second


def words(name: str | None) -> str:
    """A machine name as words: 'awaiting_finality' -> 'awaiting finality'; None -> 'unknown'."""
    if not name:
        return "unknown"
    return name.replace("_", " ").strip()
