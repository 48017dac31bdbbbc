"""`recon db`: schema migrations (the Procfile's release step)."""

from __future__ import annotations

import click

from recon.cli.startup import fail, settings_or_exit


def _run(action: str, revision: str) -> None:
    from sqlalchemy.exc import OperationalError

    from foundation.settings import mask_url_password
    from migrations import runner as migrate

    settings = settings_or_exit()
    try:
        getattr(migrate, action)(settings.store.database_url, revision)
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        fail(
            f"database unreachable at {mask_url_password(settings.store.database_url)}: {reason} "
            "(check DATABASE_URL and that the server is running)"
        )
    click.echo(
        f"database at {action.replace('upgrade', 'upgraded').replace('downgrade', 'downgraded')} to {revision}"
    )


@click.group()
def db() -> None:
    """Create and migrate the store's schema."""


@db.command()
@click.option("--revision", default="head", show_default=True, help="Alembic revision to reach.")
def upgrade(revision: str) -> None:
    """Apply migrations up to REVISION (run once per deploy, before the other processes)."""
    _run("upgrade", revision)


@db.command()
@click.option(
    "--revision", default="base", show_default=True, help="Alembic revision to go back to."
)
def downgrade(revision: str) -> None:
    """Revert migrations down to REVISION (base drops every table: only for development)."""
    _run("downgrade", revision)
