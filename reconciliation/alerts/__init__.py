"""Alerts: their life cycle, how one pass's findings change them, and where they are sent."""

from reconciliation.alerts.lifecycle import (
    SEVERITIES,
    STATES,
    AlertError,
    AlertNotFoundError,
    alert_as_dict,
    list_alerts,
)

__all__ = [
    "SEVERITIES",
    "STATES",
    "AlertError",
    "AlertNotFoundError",
    "alert_as_dict",
    "list_alerts",
]
