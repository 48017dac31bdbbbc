"""Reading a report window from text (CLI options, query parameters), one way for both."""

from __future__ import annotations

from datetime import UTC, datetime

from reconciliation.reports.model import ReportWindow
from reconciliation.reports.query import ReportError


def parse_moment(text: str, name: str) -> datetime:
    """An ISO 8601 time with a zone ('2026-11-22T10:00:00Z'), or a date meaning its UTC midnight.

    A time without a zone is refused: guessing the zone of a finance report is how a day of
    payments goes missing from it.
    """
    value = text.strip()
    try:
        if len(value) == 10:
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ReportError(
            f"{name} {text!r} is not a date or time: use 2026-11-22 or 2026-11-22T10:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise ReportError(f"{name} {text!r} has no time zone: add Z (UTC) or an offset like +01:00")
    return moment.astimezone(UTC)


def parse_window(
    since: str | None, until: str | None, holding: str | None, now: datetime
) -> ReportWindow:
    return ReportWindow(
        since=parse_moment(since, "since") if since else None,
        until=parse_moment(until, "until") if until else now,
        holding_ref=holding.strip() if holding else None,
    )
