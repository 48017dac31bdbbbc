"""`recon config`: see the effective configuration without seeing a secret."""

from __future__ import annotations

import os

import click

from foundation.settings import TEST_GATEWAY_KEY_PREFIX
from recon.cli.startup import settings_or_exit


@click.group()
def config() -> None:
    """Inspect and prepare configuration."""


@config.command("check")
def check() -> None:
    """Validate the environment and print the effective configuration, secrets masked.

    One line per variable, by the name you set it with; a value you did not set is marked
    "(default)".
    """
    settings = settings_or_exit()
    shown = settings.by_variable()
    width = max(len(k) for k in shown)
    for name, value in shown.items():
        unset = not os.environ.get(name, "").strip()
        click.echo(f"{name.ljust(width)}  {value}{'  (default)' if unset else ''}")
    mode = (
        "embedded (SQLite or in-process broker)"
        if settings.broker.embedded
        else "distributed (Redis broker)"
    )
    click.echo(f"\nconfiguration is valid; mode: {mode}")
    if settings.provider.mode == "live" and settings.provider.gateway_api_key.reveal().startswith(
        TEST_GATEWAY_KEY_PREFIX
    ):
        # Allowed (only stricter), but said: a deploy that meant the sandbox should know.
        click.echo(
            "note: RECON_PROVIDER_MODE=live with a test gateway key (ak_test_...): live rules "
            "for a test key, so credentials are held to live strength"
        )


@config.command("generate-key")
def generate_key() -> None:
    """Print a new key for RECON_SECRET_KEY (put it first; keep old keys after it to rotate)."""
    from cryptography.fernet import Fernet

    click.echo(Fernet.generate_key().decode())
