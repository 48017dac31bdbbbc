"""What every command does first: load the settings, or stop with one line naming the variable.

Kept apart from `recon.cli.main`, which imports every command module, so that the command
modules can share these two functions without importing the module that imports them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from foundation.settings import ConfigError, Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status for configuration and connectivity problems (usage errors are click's 2 too).
EXIT_CONFIG = 2


def fail(message: str) -> NoReturn:
    """End the command with one line, for problems the operator must fix outside recon."""
    click.echo(f"recon: {message}", err=True)
    sys.exit(EXIT_CONFIG)


def settings_or_exit(*, keeps_secrets: bool = False) -> Settings:
    """Load and validate the configuration, or stop with the one line that names the variable.

    `keeps_secrets`: the command encrypts or decrypts stored secrets (the web process, webhook
    registration), so the embedded default's key file is created now if there is none. Every
    other command leaves the disk alone.
    """
    try:
        settings = load_settings()
    except ConfigError as exc:
        fail(str(exc))
    if keeps_secrets:
        from foundation.secret_key import provision_secret_keys

        settings = provision_secret_keys(settings)
    from foundation.logs import configure_logging, register_secrets

    configure_logging(settings.logs.format, settings.logs.level)
    register_secrets(
        [
            settings.provider.gateway_api_key,
            settings.provider.company_api_key,
            settings.web.admin_token,
            settings.alerts.webhook_secret,
            *settings.store.secret_keys,
            *settings.webhooks.secrets,
        ]
    )
    return settings
