"""Alembic environment: one metadata, SQLite and PostgreSQL, URL from the caller or DATABASE_URL."""

from __future__ import annotations

import os
from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import Connection
from sqlalchemy.types import TypeDecorator

from migrations import frozen_types
from reconciliation.store import Base, make_engine

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    from foundation import normalise_database_url

    url = config.get_main_option("sqlalchemy.url") or os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError("no database URL: set DATABASE_URL or use `recon db upgrade`")
    return normalise_database_url(url)


def _run(connection: Connection) -> None:
    """Run the migrations on `connection`, with SQLite's foreign keys off while they run.

    SQLite changes a column by copying its table and dropping the old one (batch mode), and with
    foreign keys on, dropping `holdings` while `postings` point at it fails, so a store holding
    any data could not be upgraded. The pragma only takes effect outside a transaction, so it is
    set before the migrations' transaction begins; the keys are checked once they are done.
    """
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()  # end the transaction SQLAlchemy began, so alembic's is its own
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()
    if sqlite:
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        connection.exec_driver_sql("PRAGMA foreign_keys=ON")
        connection.commit()
        if broken:
            raise RuntimeError(f"the migrations left rows whose foreign keys dangle: {broken[:5]}")


def _frozen_type(kind: str, obj: Any, autogen: AutogenContext) -> str | Literal[False]:
    """Render a model's own column type from migrations.frozen_types, never from the domain.

    A new migration so names the type as it is frozen today; if the models' type has changed
    its DDL since, the class frozen here is wrong for it and a new one must be added (the
    migration fails to import until it is), rather than an old migration changing underneath.
    """
    frozen = getattr(frozen_types, type(obj).__name__, None)
    if kind != "type" or not isinstance(obj, TypeDecorator) or frozen is None:
        return False
    autogen.imports.add("from migrations import frozen_types")
    return f"frozen_types.{obj!r}"


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_item=_frozen_type,
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
        _run(connection)
        return
    engine = make_engine(_url())
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
