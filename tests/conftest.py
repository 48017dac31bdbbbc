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
import sys
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from foundation import normalise_database_url
from migrations import runner as migrate
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Base

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_report_header(config: pytest.Config) -> str:
    """Say which provider the sandboxes of this run play (RECON_SANDBOX_VARIANT)."""
    from sandbox.variants import variant_from_environment

    return f"provider variant: {variant_from_environment().name}"


#: Fixtures that start a provider sandbox, which plays RECON_SANDBOX_VARIANT's provider.
SANDBOX_FIXTURES = frozenset({"sandbox", "probed"})


def _reaches_the_sandbox(module: ModuleType, seen: dict[str, bool]) -> bool:
    """Whether `module`, or a test helper module it uses, uses the sandbox package.

    What a module's namespace holds says what it imported: a sandbox module, a name defined in
    one, or a helper of ours (tests.*) that itself reaches the sandbox.
    """
    if module.__name__ not in seen:
        seen[module.__name__] = False  # a circle of helpers ends here
        origins = {
            value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", "")
            for value in vars(module).values()
        }
        seen[module.__name__] = any(
            isinstance(origin, str)
            and (
                origin.partition(".")[0] == "sandbox"
                or (
                    origin.startswith("tests.")
                    and origin in sys.modules
                    and _reaches_the_sandbox(sys.modules[origin], seen)
                )
            )
            for origin in origins
        )
    return seen[module.__name__]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `provider_variant` every test whose outcome can depend on the provider's choices.

    Those are the tests that play a provider: through a sandbox fixture, or through the sandbox
    package itself (a config, a server, a scenario helper). `make test-variants` runs only them
    again under each other provider preset; a test that never meets a sandbox runs once. A test
    that reaches the sandbox another way (a `recon demo` subprocess) carries the mark itself.
    """
    seen: dict[str, bool] = {}
    for item in items:
        module = getattr(item, "module", None)
        if SANDBOX_FIXTURES & set(getattr(item, "fixturenames", ())) or (
            module is not None and _reaches_the_sandbox(module, seen)
        ):
            item.add_marker(pytest.mark.provider_variant)


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


#: Logical Redis databases each test process may use: its own and one it flushes (the demos').
REDIS_DATABASES_PER_WORKER = 2


def worker_index() -> int:
    """This test process's number under pytest-xdist (gw0, gw1, ...), 0 when run alone.

    Whatever the tests share outside their tmp_path (a Redis logical database, a PostgreSQL
    database name) is derived from it, so the suite runs on every core without two processes
    stepping on one another.
    """
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)


def _redis_database(offset: int) -> str:
    """REDIS_URL on this test process's logical database `offset` (0 or 1) below its own."""
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
    base, _, number = url.rpartition("/")
    first = int(number) if number.isdigit() else 15
    slot = first - REDIS_DATABASES_PER_WORKER * worker_index() - offset
    return f"{base}/{slot % 16}"


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A reachable Redis (REDIS_URL, default the local one): a logical database of this process.

    Each test process gets two databases of its own below REDIS_URL's (15 and 14 for the first,
    13 and 12 for the second, ...): this one, and `flushed_redis_url`'s.
    """
    import redis

    url = _redis_database(0)
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no usable Redis"
        _unavailable("Redis", f"{url} did not answer ({exc}); start redis-server or set REDIS_URL")
    return url


@pytest.fixture
def flushed_redis_url(redis_url: str) -> str:
    """An empty logical database of this test process, for a run that must start from nothing."""
    import redis

    url = _redis_database(1)
    redis.Redis.from_url(url).flushdb()
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
