"""Fixtures of the retention tests: a PostgreSQL database of their own for a long history."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from migrations import runner as migrate
from reconciliation.store.db import make_engine
from tests.conftest import _unavailable, postgres_admin_url


@pytest.fixture(scope="module")
def fresh_postgres_url() -> Iterator[str]:
    """A migrated PostgreSQL database for one test module, dropped afterwards."""
    admin = postgres_admin_url()
    if admin is None:
        _unavailable("PostgreSQL", "set RECON_TEST_POSTGRES_URL or DATABASE_URL=postgresql://...")
        raise AssertionError("unreachable")
    name = f"recon_history_{uuid.uuid4().hex[:10]}"
    admin_engine = make_engine(admin, isolation_level="AUTOCOMMIT")
    with admin_engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    base, _, _ = admin.rpartition("/")
    url = f"{base}/{name}"
    try:
        migrate.upgrade(url)
        yield url
    finally:
        with admin_engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()
