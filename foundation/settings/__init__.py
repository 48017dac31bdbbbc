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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Protocol

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


#: Every group, in the order of `Settings` (the order problems are reported in).
_GROUPS: tuple[type[_Group], ...] = (
    StoreSettings,
    BrokerSettings,
    ProviderSettings,
    WebSettings,
    WebhookSettings,
    ScheduleSettings,
    MatchingSettings,
    AlertSettings,
    LogSettings,
    RetentionSettings,
)

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


def configuration_problems(env: Mapping[str, str] | None = None) -> list[str]:
    """Every missing or malformed variable, one line each; empty when the settings load.

    Each group is read with a collecting reader, and a rule a group checks itself (one value
    against another) is caught per group, so one bad variable never hides the next one.
    """
    r = EnvReader(os.environ if env is None else env, collect=True)
    for group in _GROUPS:
        r.collected(group.from_env)
    return r.problems


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Validate the whole environment into Settings, or raise one ConfigError with every problem."""
    source = os.environ if env is None else env
    problems = configuration_problems(source)
    if problems:
        raise ConfigError("\n".join(problems))
    # Nothing is wrong, so the strict reader below cannot raise; it builds the typed values.
    r = EnvReader(source)
    settings = Settings(
        store=StoreSettings.from_env(r),
        broker=BrokerSettings.from_env(r),
        provider=ProviderSettings.from_env(r),
        web=WebSettings.from_env(r),
        webhooks=WebhookSettings.from_env(r),
        schedules=ScheduleSettings.from_env(r),
        matching=MatchingSettings.from_env(r),
        alerts=AlertSettings.from_env(r),
        logs=LogSettings.from_env(r),
        retention=RetentionSettings.from_env(r),
    )
    # Every surface formats money through foundation.money, which learns the configured
    # units here: each process (web, worker, CLI) loads its settings before it shows an amount.
    use_unit_exponents(dict(settings.provider.unit_exponents))
    return settings
