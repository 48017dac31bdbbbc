"""Settings groups for how often recon works and how long it keeps and tolerates things.

Schedules, the matching window and graces, alerts, logs and retention: the knobs an operator
turns after the first deploy, apart from `groups.py`'s where-and-who (store, broker, provider,
web, receiver).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from foundation.money import CURRENCY_EXPONENTS, MAX_AMOUNT_DIGITS
from foundation.secret import Secret
from foundation.settings._env import EnvReader, positive_int
from foundation.settings.strength import alert_secret_problem, provider_mode


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    """How often each periodic job runs, and how a transfer's polls back off."""

    poll_activity_seconds: float
    poll_transfers_seconds: float
    transfer_backoff_first_seconds: float
    transfer_backoff_cap_seconds: float
    snapshot_balances_seconds: float
    discover_holdings_seconds: float
    check_subscription_seconds: float
    sweep_seconds: float
    reconcile_seconds: float
    delivery_grace_seconds: float
    # The audit of every holding's postings against the gateway (recon audit): daily.
    audit_seconds: float = 86_400.0
    # The longest a holding goes unread (activity and balance) when nothing signals it: a
    # quiet holding's reads back off up to this, so a posting nobody notified (a dropped
    # webhook) is still found within it. Below RECON_POLL_ACTIVITY_SECONDS it is that. Holdings / this is the silent reads' share of the
    # gateway budget (recon config check reports a ceiling the budget cannot hold).
    max_staleness_seconds: float = 3600.0

    @classmethod
    def from_env(cls, r: EnvReader) -> ScheduleSettings:
        # Waits between polls of a transfer still awaiting finality: first, then doubling to a cap.
        backoff_first = r.seconds("RECON_TRANSFER_BACKOFF_FIRST_SECONDS", 2.0)
        backoff_cap = r.seconds("RECON_TRANSFER_BACKOFF_CAP_SECONDS", 300.0)
        poll_activity = r.seconds("RECON_POLL_ACTIVITY_SECONDS", 15.0)
        staleness = r.seconds("RECON_MAX_STALENESS_SECONDS", 3600.0)
        r.check(
            backoff_cap >= backoff_first,
            f"RECON_TRANSFER_BACKOFF_CAP_SECONDS={backoff_cap:g} is not valid: it must be at "
            f"least RECON_TRANSFER_BACKOFF_FIRST_SECONDS ({backoff_first:g})",
        )
        return cls(
            poll_activity_seconds=poll_activity,
            poll_transfers_seconds=r.seconds("RECON_POLL_TRANSFERS_SECONDS", 5.0),
            transfer_backoff_first_seconds=backoff_first,
            transfer_backoff_cap_seconds=backoff_cap,
            snapshot_balances_seconds=r.seconds("RECON_SNAPSHOT_BALANCES_SECONDS", 60.0),
            discover_holdings_seconds=r.seconds("RECON_DISCOVER_HOLDINGS_SECONDS", 300.0),
            check_subscription_seconds=r.seconds("RECON_CHECK_SUBSCRIPTION_SECONDS", 120.0),
            sweep_seconds=r.seconds("RECON_SWEEP_SECONDS", 30.0),
            reconcile_seconds=r.seconds("RECON_RECONCILE_SECONDS", 30.0),
            delivery_grace_seconds=r.seconds("RECON_DELIVERY_GRACE_SECONDS", 60.0),
            audit_seconds=r.seconds("RECON_AUDIT_SECONDS", 86_400.0),
            max_staleness_seconds=staleness,
        )


@dataclass(frozen=True, slots=True)
class MatchingSettings:
    """The matching window, how long an absence is tolerated before it is drift, and the
    exponents of value units ISO 4217 does not know.

    The exponents live here, with what every command that reads the store loads (a report of a
    token holding needs them as much as the worker parsing its webhooks does).
    """

    match_window_seconds: int
    notification_grace_seconds: int
    projection_grace_seconds: int
    finality_deadline_seconds: int
    #: RECON_UNIT_EXPONENTS: display exponents of value units that are not ISO 4217 currencies,
    #: by unit code ("token:USDC@ethereum" -> 6); a unit not listed reads as minor units.
    unit_exponents: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_env(cls, r: EnvReader) -> MatchingSettings:
        return cls(
            match_window_seconds=r.whole_seconds("RECON_MATCH_WINDOW_SECONDS", 3600),
            notification_grace_seconds=r.whole_seconds("RECON_NOTIFICATION_GRACE_SECONDS", 900),
            projection_grace_seconds=r.whole_seconds("RECON_PROJECTION_GRACE_SECONDS", 120),
            finality_deadline_seconds=r.whole_seconds("RECON_FINALITY_DEADLINE_SECONDS", 3600),
            unit_exponents=r.convert(
                "RECON_UNIT_EXPONENTS",
                (),
                unit_exponents,
                "a comma-separated list of unit=exponent such as token:USDC@ethereum=6 "
                f"(unit codes as recon shows them, exponents 0-{MAX_AMOUNT_DIGITS}, not ISO "
                "4217 currencies, whose exponents are known)",
            ),
        )


@dataclass(frozen=True, slots=True)
class AlertSettings:
    """How many new alerts one pass may open, and where alert changes are sent."""

    cap_per_pass: int
    webhook_url: str | None
    webhook_secret: Secret | None

    @classmethod
    def from_env(cls, r: EnvReader) -> AlertSettings:
        secret = r.secret("RECON_ALERT_WEBHOOK_SECRET")
        if secret is not None:
            live = provider_mode(r) == "live"
            problem = alert_secret_problem(secret.reveal(), live=live)
            r.check(problem is None, f"RECON_ALERT_WEBHOOK_SECRET is not valid: {problem}")
        return cls(
            cap_per_pass=r.convert(
                "RECON_ALERT_CAP_PER_PASS", 50, positive_int, "a whole number of alerts > 0"
            ),
            webhook_url=r.url("RECON_ALERT_WEBHOOK_URL", None, ("http", "https")),
            webhook_secret=secret,
        )


@dataclass(frozen=True, slots=True)
class LogSettings:
    """Log format (JSON lines off a terminal), level, the sampled share of per-item lines, and
    how often a process traces where its memory grew (0: never, the default)."""

    format: str
    level: str
    item_sample: float
    trace_memory_seconds: float = 0.0

    @classmethod
    def from_env(cls, r: EnvReader) -> LogSettings:
        return cls(
            format=r.choice("RECON_LOG_FORMAT", "auto", ("auto", "json", "console")),
            level=r.choice("RECON_LOG_LEVEL", "info", ("debug", "info", "warning", "error")),
            item_sample=r.convert(
                "RECON_LOG_ITEM_SAMPLE", 0.0, _share, "a share from 0 to 1, e.g. 0.01"
            ),
            trace_memory_seconds=r.convert(
                "RECON_TRACE_MEMORY_SECONDS",
                0.0,
                _trace_interval,
                "0 (off) or a number of seconds >= 10 between two memory reports, e.g. 600",
            ),
        )


def _trace_interval(text: str) -> float:
    value = float(text)
    if not (value == 0.0 or 10.0 <= value <= 86_400.0):
        raise ValueError(text)
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(text)
    return value


#: The longest age a retention setting takes (about 100 years): far past any real need, and
#: far below what a `timedelta` can hold, so every cutoff is a valid moment.
MAX_RETENTION_DAYS: Final = 36_500.0

#: What a RECON_RETAIN_*_DAYS value may be, as the refusal says it.
RETENTION_DAYS_EXPECTED: Final = (
    "a number of days > 0, decimals allowed (e.g. 90, or 0.01 for about 15 minutes)"
)


def positive_days(text: str) -> float:
    """A retention age in days: a decimal number above zero, so tests and soaks can use minutes.

    `nan`, `inf` and anything beyond `MAX_RETENTION_DAYS` are refused: each would make a cutoff
    that is no moment at all.
    """
    value = float(text)
    if not 0.0 < value <= MAX_RETENTION_DAYS:
        raise ValueError(text)
    return value


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """How long each kind of record stays in the hot store, and how often pruning runs.

    Ages are days, decimals allowed (0.01 is about a quarter of an hour: for tests and soaks).
    What recon reconciled (postings, transfers, notifications, matches) is kept for good
    unless the operator sets a limit for it; alert history too unless `resolved_alert_days` is
    set. Pruning never reaches inside the matching window, nor anything unmatched or under an
    open alert, whatever these say (reconciliation.retention).
    """

    #: Raw delivery bytes (the inbox row) this many days after the delivery was processed.
    delivery_days: float
    #: A closed Idempotency-Key record this many days after its request completed. The provider
    #: does not say how long it honours a key; a week outlasts every common retention.
    outbound_request_days: float
    #: Balance snapshots older than this keep only changes of balance and one per holding a day.
    snapshot_thin_days: float
    #: A terminal transfer's status history is compacted (first and last kept) after this long.
    transfer_history_days: float
    #: Resolved alerts are removed this long after resolution; None keeps them for good.
    resolved_alert_days: float | None
    #: How often the scheduled prune runs.
    run_seconds: float
    #: Where the scheduled prune writes what it removes (.jsonl.gz); None writes nothing.
    archive_dir: Path | None
    #: Reconciled facts: a settled match group (its match rows and every member) goes as one
    #: unit once each of its kinds is past its own limit; None keeps that kind, and so every
    #: group it belongs to, for good (reconciliation.retention.reconciled).
    posting_days: float | None = None
    transfer_days: float | None = None
    notification_days: float | None = None
    match_days: float | None = None

    @classmethod
    def from_env(cls, r: EnvReader) -> RetentionSettings:
        days = RETENTION_DAYS_EXPECTED
        archive = r.raw("RECON_RETENTION_ARCHIVE_DIR")

        def age(name: str, default: float | None) -> float | None:
            return r.convert(name, default, positive_days, days)

        def required_age(name: str, default: float) -> float:
            return r.convert(name, default, positive_days, days)

        return cls(
            delivery_days=required_age("RECON_RETAIN_DELIVERIES_DAYS", 90.0),
            outbound_request_days=required_age("RECON_RETAIN_OUTBOUND_REQUESTS_DAYS", 7.0),
            snapshot_thin_days=required_age("RECON_RETAIN_SNAPSHOTS_DAYS", 2.0),
            transfer_history_days=required_age("RECON_RETAIN_TRANSFER_HISTORY_DAYS", 7.0),
            resolved_alert_days=age("RECON_RETAIN_RESOLVED_ALERTS_DAYS", None),
            run_seconds=r.seconds("RECON_RETENTION_SECONDS", 3600.0),
            archive_dir=Path(archive) if archive else None,
            posting_days=age("RECON_RETAIN_POSTINGS_DAYS", None),
            transfer_days=age("RECON_RETAIN_TRANSFERS_DAYS", None),
            notification_days=age("RECON_RETAIN_NOTIFICATIONS_DAYS", None),
            match_days=age("RECON_RETAIN_MATCHES_DAYS", None),
        )


def unit_exponents(text: str) -> tuple[tuple[str, int], ...]:
    """RECON_UNIT_EXPONENTS parsed; ValueError on anything but `code=exponent` pairs."""
    pairs = []
    for item in text.split(","):
        code, sep, digits = item.strip().rpartition("=")
        code = code.strip()
        if not sep or not code or not digits.strip().isdigit():
            raise ValueError(item)
        exp = int(digits)
        if exp > MAX_AMOUNT_DIGITS or code.upper() in CURRENCY_EXPONENTS:
            raise ValueError(item)
        pairs.append((code, exp))
    return tuple(pairs)
