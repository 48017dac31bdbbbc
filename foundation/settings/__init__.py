"""One typed settings object, read from the environment once at start-up.

Every process (web, worker, scheduler, CLI) takes its whole configuration from the environment,
so a deploy is a set of variables and nothing else. Validation happens here, all at once, so a
bad value stops the process before it half-starts; `ConfigError` carries one line per problem,
each naming the variable and what it expects, and the CLI prints exactly those lines. Every
problem is reported in one go: a deploy with three missing variables takes one run to fix.

The settings are composed of small groups by concern: where things are and who may talk
(`groups.py`: store, broker, provider, web, webhooks) and how often and how long
(`timing.py`: schedules, matching, alerts, logs, retention). Loading them reads the environment and
nothing else: no file is created and nothing is connected to.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Final, Protocol

from foundation.money import use_unit_exponents
from foundation.settings._env import ConfigError, EnvReader, mask_url_password, mask_url_path
from foundation.settings.groups import (
    DEFAULT_STATE_DIR,
    SIGNATURE_SCHEMES,
    BrokerSettings,
    ProviderSettings,
    StoreSettings,
    WebhookSettings,
    WebSettings,
    normalise_database_url,
)
from foundation.settings.strength import TEST_GATEWAY_KEY_PREFIX
from foundation.settings.timing import (
    AlertSettings,
    LogSettings,
    MatchingSettings,
    RetentionSettings,
    ScheduleSettings,
)

__all__ = [
    "DEFAULT_STATE_DIR",
    "SIGNATURE_SCHEMES",
    "STORE_GROUPS",
    "TEST_GATEWAY_KEY_PREFIX",
    "VARIABLES",
    "AlertSettings",
    "BrokerSettings",
    "ConfigError",
    "LogSettings",
    "MatchingSettings",
    "ProviderSettings",
    "RetentionSettings",
    "ScheduleSettings",
    "Settings",
    "StoreSettings",
    "WebSettings",
    "WebhookSettings",
    "configuration_problems",
    "load_settings",
    "mask_url_password",
    "mask_url_path",
    "normalise_database_url",
]


class _Group(Protocol):
    """What every settings group offers: reading and validating its own variables."""

    @classmethod
    def from_env(cls, r: EnvReader) -> object: ...


#: Every group by its name in `Settings`, in that order (the order problems are reported in).
_GROUPS: Final[dict[str, type[_Group]]] = {
    "store": StoreSettings,
    "broker": BrokerSettings,
    "provider": ProviderSettings,
    "web": WebSettings,
    "webhooks": WebhookSettings,
    "schedules": ScheduleSettings,
    "matching": MatchingSettings,
    "alerts": AlertSettings,
    "logs": LogSettings,
    "retention": RetentionSettings,
}

#: The groups a command that only reads or migrates the store needs: where the store is, how
#: the report judges lateness, how to log. Such a command (`recon report`, `recon db upgrade`)
#: never talks to the provider, so it must not refuse to run for want of the provider's keys.
STORE_GROUPS: Final = ("store", "matching", "logs")

#: What a group a command does not read is built from: the required credentials filled with a
#: word that is no credential, everything else at its default. Never sent anywhere: a command
#: loading only some groups never looks at the others. Built under the sandbox's rules, since a
#: placeholder is no credential to judge for strength.
_UNREAD_ENV: Final = {
    "RECON_PROVIDER_MODE": "sandbox",
    "RECON_GATEWAY_API_KEY": "not-read-by-this-command",
    "RECON_COMPANY_API_KEY": "not-read-by-this-command",
    "RECON_ADMIN_TOKEN": "not-read-by-this-command",
}

#: The variable a person sets for each setting (`group.field`), for `recon config check` and
#: for anything that names a setting to a person. tests/unit/test_settings.py checks that every
#: field is here and that each variable named really sets its field.
VARIABLES: Final[dict[str, str]] = {
    "store.database_url": "DATABASE_URL",
    "store.state_dir": "RECON_STATE_DIR",
    "store.secret_keys": "RECON_SECRET_KEY",
    "broker.redis_url": "REDIS_URL",
    "provider.gateway_url": "RECON_GATEWAY_URL",
    "provider.gateway_api_key": "RECON_GATEWAY_API_KEY",
    "provider.company_url": "RECON_COMPANY_URL",
    "provider.company_api_key": "RECON_COMPANY_API_KEY",
    "provider.company_app_id": "RECON_COMPANY_APP_ID",
    "provider.gateway_requests_per_second": "RECON_GATEWAY_RPS",
    "provider.activity_page_size": "RECON_ACTIVITY_PAGE_SIZE",
    "provider.mode": "RECON_PROVIDER_MODE",
    "web.port": "PORT",
    "web.public_url": "RECON_PUBLIC_URL",
    "web.admin_token": "RECON_ADMIN_TOKEN",
    "web.max_connections": "RECON_WEB_MAX_CONNECTIONS",
    "web.keep_alive_seconds": "RECON_WEB_KEEP_ALIVE_SECONDS",
    "web.http_parser": "RECON_WEB_HTTP_PARSER",
    "web.console_session_seconds": "RECON_CONSOLE_SESSION_SECONDS",
    "web.console_idle_seconds": "RECON_CONSOLE_IDLE_SECONDS",
    "web.auth_failures_per_minute": "RECON_AUTH_FAILURES_PER_MINUTE",
    "web.trusted_proxies": "RECON_TRUSTED_PROXIES",
    "webhooks.path": "RECON_WEBHOOK_PATH",
    "webhooks.secrets": "RECON_WEBHOOK_SECRETS",
    "webhooks.signature_scheme": "RECON_SIGNATURE_SCHEME",
    "webhooks.signature_header": "RECON_SIGNATURE_HEADER",
    "webhooks.signature_tolerance_seconds": "RECON_SIGNATURE_TOLERANCE_SECONDS",
    "webhooks.body_limit_bytes": "RECON_WEBHOOK_BODY_LIMIT_BYTES",
    "webhooks.rotation_overlap_seconds": "RECON_WEBHOOK_ROTATION_OVERLAP_SECONDS",
    "webhooks.body_timeout_seconds": "RECON_WEBHOOK_BODY_TIMEOUT_SECONDS",
    "webhooks.commit_timeout_seconds": "RECON_WEBHOOK_COMMIT_TIMEOUT_SECONDS",
    "webhooks.payload_shapes": "RECON_PAYLOAD_SHAPES",
    "webhooks.payload_field_map": "RECON_PAYLOAD_FIELD_MAP",
    "webhooks.event_outcomes": "RECON_EVENT_OUTCOMES",
    "schedules.poll_activity_seconds": "RECON_POLL_ACTIVITY_SECONDS",
    "schedules.poll_transfers_seconds": "RECON_POLL_TRANSFERS_SECONDS",
    "schedules.transfer_backoff_first_seconds": "RECON_TRANSFER_BACKOFF_FIRST_SECONDS",
    "schedules.transfer_backoff_cap_seconds": "RECON_TRANSFER_BACKOFF_CAP_SECONDS",
    "schedules.snapshot_balances_seconds": "RECON_SNAPSHOT_BALANCES_SECONDS",
    "schedules.discover_holdings_seconds": "RECON_DISCOVER_HOLDINGS_SECONDS",
    "schedules.check_subscription_seconds": "RECON_CHECK_SUBSCRIPTION_SECONDS",
    "schedules.sweep_seconds": "RECON_SWEEP_SECONDS",
    "schedules.reconcile_seconds": "RECON_RECONCILE_SECONDS",
    "schedules.delivery_grace_seconds": "RECON_DELIVERY_GRACE_SECONDS",
    "schedules.audit_seconds": "RECON_AUDIT_SECONDS",
    "schedules.max_staleness_seconds": "RECON_MAX_STALENESS_SECONDS",
    "matching.match_window_seconds": "RECON_MATCH_WINDOW_SECONDS",
    "matching.notification_grace_seconds": "RECON_NOTIFICATION_GRACE_SECONDS",
    "matching.projection_grace_seconds": "RECON_PROJECTION_GRACE_SECONDS",
    "matching.finality_deadline_seconds": "RECON_FINALITY_DEADLINE_SECONDS",
    "matching.unit_exponents": "RECON_UNIT_EXPONENTS",
    "alerts.cap_per_pass": "RECON_ALERT_CAP_PER_PASS",
    "alerts.webhook_url": "RECON_ALERT_WEBHOOK_URL",
    "alerts.webhook_secret": "RECON_ALERT_WEBHOOK_SECRET",
    "logs.format": "RECON_LOG_FORMAT",
    "logs.level": "RECON_LOG_LEVEL",
    "logs.item_sample": "RECON_LOG_ITEM_SAMPLE",
    "logs.trace_memory_seconds": "RECON_TRACE_MEMORY_SECONDS",
    "retention.delivery_days": "RECON_RETAIN_DELIVERIES_DAYS",
    "retention.outbound_request_days": "RECON_RETAIN_OUTBOUND_REQUESTS_DAYS",
    "retention.snapshot_thin_days": "RECON_RETAIN_SNAPSHOTS_DAYS",
    "retention.transfer_history_days": "RECON_RETAIN_TRANSFER_HISTORY_DAYS",
    "retention.resolved_alert_days": "RECON_RETAIN_RESOLVED_ALERTS_DAYS",
    "retention.run_seconds": "RECON_RETENTION_SECONDS",
    "retention.archive_dir": "RECON_RETENTION_ARCHIVE_DIR",
    "retention.posting_days": "RECON_RETAIN_POSTINGS_DAYS",
    "retention.transfer_days": "RECON_RETAIN_TRANSFERS_DAYS",
    "retention.notification_days": "RECON_RETAIN_NOTIFICATIONS_DAYS",
    "retention.match_days": "RECON_RETAIN_MATCHES_DAYS",
}

#: Fields whose values are connection URLs that may carry a password.
_URL_FIELDS = frozenset({"database_url", "redis_url"})
#: Fields whose values are URLs that are credentials in themselves (the token in the path).
_CREDENTIAL_URL_FIELDS = frozenset({"webhook_url"})


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective configuration of a recon process, one group per concern.

    Secrets are wrapped in `Secret`, so printing this object, logging it or putting it in an
    exception never shows them.
    """

    store: StoreSettings
    broker: BrokerSettings
    provider: ProviderSettings
    web: WebSettings
    webhooks: WebhookSettings
    schedules: ScheduleSettings
    matching: MatchingSettings
    alerts: AlertSettings
    logs: LogSettings
    retention: RetentionSettings

    def __repr__(self) -> str:
        # Connection URLs may carry passwords; the dataclass repr would print them.
        return "Settings(" + ", ".join(f"{k}={v}" for k, v in self.masked().items()) + ")"

    def masked(self) -> dict[str, str]:
        """The effective configuration as text, `group.field` keys, secrets masked."""
        return dict(_masked_items(self))

    def by_variable(self) -> dict[str, str]:
        """The effective configuration keyed by the variable a person sets, secrets masked."""
        return {VARIABLES[key]: value for key, value in _masked_items(self)}


def _masked_items(settings: Settings) -> Iterator[tuple[str, str]]:
    for group_field in fields(settings):
        group = getattr(settings, group_field.name)
        assert is_dataclass(group)
        for f in fields(group):
            value = getattr(group, f.name)
            key = f"{group_field.name}.{f.name}"
            if isinstance(value, tuple):
                yield key, ", ".join(str(v) for v in value) or "(none)"
            elif f.name in _URL_FIELDS and value:
                yield key, mask_url_password(str(value))
            elif f.name in _CREDENTIAL_URL_FIELDS and value:
                yield key, mask_url_path(str(value))
            else:
                yield key, "(unset)" if value is None else str(value)


def configuration_problems(
    env: Mapping[str, str] | None = None, *, only: Collection[str] | None = None
) -> list[str]:
    """Every missing or malformed variable, one line each; empty when the settings load.

    Each group is read with a collecting reader, and a rule a group checks itself (one value
    against another) is caught per group, so one bad variable never hides the next one.
    `only`: the names of the groups to check (default: all).
    """
    r = EnvReader(os.environ if env is None else env, collect=True)
    for name, group in _GROUPS.items():
        if only is None or name in only:
            r.collected(group.from_env)
    return r.problems


def load_settings(
    env: Mapping[str, str] | None = None, *, only: Collection[str] | None = None
) -> Settings:
    """Validate the environment into Settings, or raise one ConfigError with every problem.

    `only`: the names of the groups the caller reads (`STORE_GROUPS` for a command that only
    reads the store); the others are not validated and hold their defaults, so a missing
    provider key cannot stop a command that never calls the provider.
    """
    source = os.environ if env is None else env
    unknown = set(only or ()) - set(_GROUPS)
    if unknown:
        raise ValueError(f"no settings group is called {', '.join(sorted(unknown))}")
    problems = configuration_problems(source, only=only)
    if problems:
        raise ConfigError("\n".join(problems))
    # Nothing is wrong, so the strict readers below cannot raise; they build the typed values.
    read, unread = EnvReader(source), EnvReader(_UNREAD_ENV)
    groups = {
        name: group.from_env(read if only is None or name in only else unread)
        for name, group in _GROUPS.items()
    }
    settings = Settings(**groups)  # type: ignore[arg-type]
    # Every surface formats money through foundation.money, which learns the configured
    # units here: each process (web, worker, CLI) loads its settings before it shows an amount.
    use_unit_exponents(dict(settings.matching.unit_exponents))
    return settings
