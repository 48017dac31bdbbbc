"""Alembic environment: one metadata, SQLite and PostgreSQL, URL from the caller or DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from reconciliation.store.db import make_engine
from reconciliation.store.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    from foundation.settings import normalise_database_url

    url = config.get_main_option("sqlalchemy.url") or os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError("no database URL: set DATABASE_URL or use `recon db upgrade`")
    return normalise_database_url(url)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_url())
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
