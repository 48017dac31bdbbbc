"""Run Alembic from code, so `recon db upgrade` needs no alembic.ini in the working directory."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

import migrations

#: Where the migration scripts live: inside the installed `migrations` package.
SCRIPT_LOCATION = str(Path(migrations.__file__).parent)


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    # ConfigParser interpolation would choke on a '%' in a password.
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    """Revert to `revision`, always named by the caller: "base" drops every table."""
    command.downgrade(alembic_config(database_url), revision)


def revision_ids(database_url: str) -> list[str]:
    """Every migration's revision id, newest first (what `recon db downgrade` may name)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(database_url))
    return [r.revision for r in script.walk_revisions()]


def check(database_url: str) -> None:
    """Raise if the models and the migrations disagree (alembic's own autogenerate diff)."""
    command.check(alembic_config(database_url))
