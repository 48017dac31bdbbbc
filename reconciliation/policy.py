"""The few settings a reconciliation pass obeys, as one frozen value.

A pass is called by a worker tick and by `recon reconcile`; giving it a small policy instead of
the whole environment keeps `reconciliation/` free of configuration loading and makes every
test state its thresholds in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from foundation import Secret, Settings

#: Consecutive poll errors after which a cursor that has not moved is called stuck: one or two
#: errors are the provider's weather, five in a row are a person's problem.
POLLER_STUCK_ERRORS: Final = 5


@dataclass(frozen=True, slots=True)
class ReconcilePolicy:
    """Thresholds of matching and drift, and where alerts go besides the store.

    match_window_seconds: how far apart a notification and a posting may be in time and still
        match by account number and amount (rule 3).
    notification_grace_seconds: how long a posting waits for its notification, and a
        notification for its posting, before the gap is drift.
    projection_grace_seconds: how far a balance snapshot may trail the postings it is built from.
    finality_deadline_seconds: how long a transfer may await finality before it is overdue.
    alert_cap_per_pass: at most this many alerts open in one pass; the rest are summarised.
    """

    match_window_seconds: int = 3600
    notification_grace_seconds: int = 900
    projection_grace_seconds: int = 120
    finality_deadline_seconds: int = 3600
    alert_cap_per_pass: int = 50
    poller_stuck_errors: int = POLLER_STUCK_ERRORS
    alert_webhook_url: str | None = None
    alert_webhook_secret: Secret | None = None

    def __post_init__(self) -> None:
        for name in (
            "match_window_seconds",
            "notification_grace_seconds",
            "projection_grace_seconds",
            "finality_deadline_seconds",
            "alert_cap_per_pass",
            "poller_stuck_errors",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"ReconcilePolicy.{name} must be a whole number > 0, got {value!r}"
                )
        if self.alert_webhook_url and self.alert_webhook_secret is None:
            raise ValueError(
                "an alert webhook URL needs a secret to sign with: set RECON_ALERT_WEBHOOK_SECRET"
            )

    @classmethod
    def from_settings(cls, settings: Settings | ReconcilePolicy) -> ReconcilePolicy:
        """Build from the matching and alert groups of the settings.

        A ReconcilePolicy passes through unchanged, so callers may hand either.
        """
        if isinstance(settings, ReconcilePolicy):
            return settings
        return cls(
            match_window_seconds=settings.matching.match_window_seconds,
            notification_grace_seconds=settings.matching.notification_grace_seconds,
            projection_grace_seconds=settings.matching.projection_grace_seconds,
            finality_deadline_seconds=settings.matching.finality_deadline_seconds,
            alert_cap_per_pass=settings.alerts.cap_per_pass,
            poller_stuck_errors=POLLER_STUCK_ERRORS,
            alert_webhook_url=settings.alerts.webhook_url,
            alert_webhook_secret=settings.alerts.webhook_secret,
        )
