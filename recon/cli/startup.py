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


def settings_or_exit() -> Settings:
    """Load and validate the configuration, or stop with the one line that names the variable."""
    try:
        settings = load_settings()
    except ConfigError as exc:
        fail(str(exc))
    from foundation.logs import configure_logging, register_secrets

    configure_logging(settings.log_format, settings.log_level)
    register_secrets(
        [
            settings.gateway_api_key,
            settings.company_api_key,
            settings.admin_token,
            settings.alert_webhook_secret,
            *settings.secret_keys,
            *settings.webhook_secrets,
        ]
    )
    return settings
