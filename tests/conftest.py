"""Fixtures shared by every test: real databases, real Redis, a real sandbox.

Store tests run on both databases: `db_url` is parametrized over a fresh SQLite file and a
PostgreSQL database created for this test session. PostgreSQL comes from
RECON_TEST_POSTGRES_URL or, failing that, a postgresql DATABASE_URL. Under CI=true a missing
PostgreSQL or Redis fails the run; on a laptop those tests are skipped with a reason that says
how to enable them.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from foundation.settings import normalise_database_url
from migrations import runner as migrate
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Base

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_report_header(config: pytest.Config) -> str:
    """Say which provider the sandboxes of this run play (RECON_SANDBOX_VARIANT)."""
    from sandbox.variants import variant_from_environment

    return f"provider variant: {variant_from_environment().name}"


#: How the skips of a missing service begin; `_unavailable` writes them, the summary folds them.
SERVICE_SKIP_PREFIXES = ("PostgreSQL unavailable:", "Redis unavailable:")


def _unavailable(what: str, how: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} is unavailable under CI=true: {how}", pytrace=False)
    pytest.skip(f"{what} unavailable: {how}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """One summary line per skip reason, with its count, instead of one per skipping test.

    `-ra` folds skips that share a file, a line and a reason. Without PostgreSQL or Redis some
    150 tests skip for the same two reasons from as many lines, which buried the summary; so a
    service skip is reported where it is decided (this file) and any other skip without its
    line number, and pytest's own folding then counts each reason once.
    """
    report = yield
    longrepr = report.longrepr
    if not report.skipped or hasattr(report, "wasxfail") or not isinstance(longrepr, tuple):
        return report
    path, _line, reason = longrepr
    if reason.removeprefix("Skipped: ").startswith(SERVICE_SKIP_PREFIXES):
        path = __file__
    report.longrepr = (path, None, reason)
    return report


def postgres_admin_url() -> str | None:
    url = os.environ.get("RECON_TEST_POSTGRES_URL") or os.environ.get("DATABASE_URL", "")
    return normalise_database_url(url) if url.startswith("postgres") else None


@pytest.fixture(scope="session")
def postgres_template_url() -> Iterator[str]:
    """A PostgreSQL database made for this session and migrated to head, dropped at the end."""
    admin = postgres_admin_url()
    if admin is None:
        _unavailable("PostgreSQL", "set RECON_TEST_POSTGRES_URL or DATABASE_URL=postgresql://...")
        raise AssertionError("unreachable")
    name = f"recon_test_{uuid.uuid4().hex[:10]}"
    admin_engine = make_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        with admin_engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001 - any failure here means "no usable PostgreSQL"
        admin_engine.dispose()
        _unavailable("PostgreSQL", f"cannot create a test database: {exc}")
    base, _, _ = admin.rpartition("/")
    url = f"{base}/{name}"
    migrate.upgrade(url)
    yield url
    with admin_engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin_engine.dispose()


@pytest.fixture
def switchable_postgres(
    postgres_template_url: str,
) -> Iterator[tuple[str, Callable[[bool], None]]]:
    """A PostgreSQL database of its own, and a switch that refuses or allows connections."""
    admin_url = postgres_admin_url()
    assert admin_url is not None
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"recon_switch_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = normalise_database_url(admin_url).rpartition("/")[0] + f"/{name}"
    migrate.upgrade(url)

    def available(allowed: bool) -> None:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}'))
            if not allowed:
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"
                    ),
                    {"n": name},
                )

    yield url, available
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test: much faster than migrating every time."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


def _truncate_postgres(engine: Engine) -> None:
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


#: A test of PostgreSQL alone (a race SQLite's one writer cannot run, a limit it does not
#: enforce): `db_url` with its PostgreSQL case only, so no SQLite case is collected only to be
#: skipped on every run.
postgres_only = pytest.mark.parametrize(
    "db_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty, migrated store: once on SQLite, once on PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "recon.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    url: str = request.getfixturevalue("postgres_template_url")
    engine = make_engine(url)
    _truncate_postgres(engine)
    engine.dispose()
    yield url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def session_factory(engine: Engine) -> sessionmaker[Session]:
    return make_session_factory(engine)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A reachable Redis (REDIS_URL, default the local one); a flushable logical database."""
    import redis

    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no usable Redis"
        _unavailable("Redis", f"{url} did not answer ({exc}); start redis-server or set REDIS_URL")
    return url


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    """A complete, valid environment for `load_settings`, isolated in tmp_path."""
    from cryptography.fernet import Fernet

    return {
        "RECON_STATE_DIR": str(tmp_path / "state"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'state' / 'recon.db'}",
        "RECON_GATEWAY_URL": "http://127.0.0.1:9",
        "RECON_GATEWAY_API_KEY": "ak_test_recon",
        "RECON_COMPANY_API_KEY": "ck_test_recon",
        "RECON_COMPANY_APP_ID": "6f1c2a34-0000-4000-8000-00000000c0de",
        "RECON_PUBLIC_URL": "http://127.0.0.1:8000",
        "RECON_SECRET_KEY": Fernet.generate_key().decode(),
        "RECON_ADMIN_TOKEN": "admin-token-for-tests-0123456789",
    }
