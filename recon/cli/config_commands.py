"""`recon config`: see the effective configuration without seeing a secret."""

from __future__ import annotations

import os

import click

from foundation import TEST_GATEWAY_KEY_PREFIX, Settings
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
    shortfall = _ceiling_shortfall(settings)
    if shortfall is not None:
        click.echo(f"\nwarning: {shortfall}")
    click.echo(f"\nconfiguration is valid; mode: {mode}")
    if settings.provider.mode == "live" and settings.provider.gateway_api_key.reveal().startswith(
        TEST_GATEWAY_KEY_PREFIX
    ):
        # Allowed (only stricter), but said: a deploy that meant the sandbox should know.
        click.echo(
            "note: RECON_PROVIDER_MODE=live with a test gateway key (ak_test_...): live rules "
            "for a test key, so credentials are held to live strength"
        )


def _ceiling_shortfall(settings: Settings) -> str | None:
    """The staleness ceiling the gateway budget cannot hold for the holdings the store knows,
    as a sentence; None when it holds, or when there is no store to count them in yet (a
    check before the first deploy): the check never creates nor changes a store."""
    from sqlalchemy.exc import SQLAlchemyError

    from reconciliation.postings import ReadBudget, stored_ceiling_shortfall
    from reconciliation.store import StoreMissingError, make_engine, make_session_factory

    budget = ReadBudget(
        settings.provider.gateway_requests_per_second, settings.schedules.max_staleness_seconds
    )
    try:
        engine = make_engine(settings.store.database_url, must_exist=True)
    except (StoreMissingError, SQLAlchemyError):
        return None
    try:
        with make_session_factory(engine)() as session:
            found = stored_ceiling_shortfall(session, budget)
    except SQLAlchemyError:
        return None  # unreachable, or not migrated yet: nothing to count
    finally:
        engine.dispose()
    return None if found is None else found.sentence()


@config.command("generate-key")
def generate_key() -> None:
    """Print a new key for RECON_SECRET_KEY (put it first; keep old keys after it to rotate)."""
    from cryptography.fernet import Fernet

    click.echo(Fernet.generate_key().decode())


COMMANDS = [config]
