"""`recon db`: schema migrations (the Procfile's release step).

`recon db downgrade` destroys: it must name the revision to go back to (no default), and
`base`, which drops every table and all the data in them, also needs `--drop-everything`.
"""

from __future__ import annotations

import click

from recon.cli.startup import fail, settings_or_exit


def _store_revision(database_url: str) -> str:
    """The revision the store is at now, as Alembic recorded it ("base" for an empty store)."""
    from alembic.runtime.migration import MigrationContext

    from reconciliation.store import make_engine

    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision() or "base"
    finally:
        engine.dispose()


def _run(action: str, revision: str) -> None:
    from sqlalchemy.exc import OperationalError

    from foundation import mask_url_password
    from migrations import runner as migrate

    settings = settings_or_exit(store_only=True)
    shown = mask_url_password(settings.store.database_url)
    try:
        before = _store_revision(settings.store.database_url)
        getattr(migrate, action)(settings.store.database_url, revision)
        after = _store_revision(settings.store.database_url)
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        fail(
            f"database unreachable at {shown}: {reason} "
            "(check DATABASE_URL and that the server is running)"
        )
    done = "upgraded" if action == "upgrade" else "downgraded"
    if before == after:
        click.echo(f"database at {shown} is already at {revision} (revision {after})")
    else:
        click.echo(f"database at {shown} {done} to {revision}: revision {before} -> {after}")


@click.group()
def db() -> None:
    """Create and migrate the store's schema."""


@db.command()
@click.option("--revision", default="head", show_default=True, help="Alembic revision to reach.")
def upgrade(revision: str) -> None:
    """Apply migrations up to REVISION (run once per deploy, before the other processes)."""
    _run("upgrade", revision)


#: The target that drops every table.
BASE = "base"


@db.command()
@click.option(
    "--revision",
    required=True,
    help="Revision to go back to: a migration's id, or base (drops every table).",
)
@click.option(
    "--drop-everything",
    is_flag=True,
    help="Confirm --revision base: every table of the store and all its data are dropped.",
)
def downgrade(revision: str, drop_everything: bool) -> None:
    """Revert migrations down to REVISION (base drops every table: only for development)."""
    from foundation import mask_url_password
    from migrations import runner as migrate

    settings = settings_or_exit()
    target = revision.strip()
    if target == BASE:
        if not drop_everything:
            shown = mask_url_password(settings.store.database_url)
            fail(
                f"--revision base drops every table of the store at {shown} and all its data; "
                "add --drop-everything if that is what you want"
            )
    elif target not in (known := migrate.revision_ids(settings.store.database_url)):
        fail(f"no revision {target!r}: name one of {', '.join([*known, BASE])}")
    _run("downgrade", target)


COMMANDS = [db]
