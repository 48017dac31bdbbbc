"""What every report query shares: the window, the holding filter, the unknown holding."""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import ColumnElement, true

from reconciliation.reports.model import ReportWindow

#: Stands in for a holding we do not know (a notification naming another account).
UNKNOWN_HOLDING: Final = "(unknown)"


def in_window(column: Any, window: ReportWindow) -> ColumnElement[bool]:
    condition: ColumnElement[bool] = column < window.until
    if window.since is not None:
        condition = condition & (column >= window.since)
    return condition


def for_holding(column: Any, holding_id: int | None) -> ColumnElement[bool]:
    return true() if holding_id is None else column == holding_id
