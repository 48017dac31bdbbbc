"""Reading a report window from text (CLI options, query parameters), one way for both."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from reconciliation.reports.model import ReportWindow
from reconciliation.reports.query import ReportError

#: The earliest and latest moments a report window may name: far beyond any real payment,
#: far enough inside datetime's range that adding a grace period or an age cannot overflow.
EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(9000, 1, 1, tzinfo=UTC)


def parse_moment(text: str, name: str) -> datetime:
    """An ISO 8601 time with a zone ('2026-11-22T10:00:00Z'), or a date meaning its UTC midnight.

    A time without a zone is refused: guessing the zone of a finance report is how a day of
    payments goes missing from it.
    """
    value = text.strip()
    shown = text[:40]
    try:
        if len(value) == 10:
            parsed = datetime.fromisoformat(value).replace(tzinfo=UTC)
        else:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ReportError(
            f"{name} {shown!r} is not a date or time: use 2026-11-22 or 2026-11-22T10:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise ReportError(
            f"{name} {shown!r} has no time zone: add Z (UTC) or an offset like +01:00"
        )
    moment: datetime | None
    try:
        moment = parsed.astimezone(UTC)
    except OverflowError:  # its offset moves it past the calendar's first or last day
        moment = None
    if moment is None or not EARLIEST <= moment <= LATEST:
        # Windows are widened by grace periods and ages; near year 1 or 9999 that arithmetic
        # overflows (a 500), and no payment was ever made there.
        raise ReportError(
            f"{name} {shown!r} is out of range: use a time between "
            f"{EARLIEST.date().isoformat()} and {LATEST.date().isoformat()}"
        )
    return moment


def parse_window(
    since: str | None, until: str | None, holding: str | None, now: datetime
) -> ReportWindow:
    """The window asked for; `holding` is kept as the person typed it (trimmed) and resolved
    when the report is built (`build_report`)."""
    return ReportWindow(
        since=parse_moment(since, "since") if since else None,
        until=parse_moment(until, "until") if until else now,
        holding=holding.strip() or None if holding else None,
    )
