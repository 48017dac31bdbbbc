"""No 2xx without a commit: the receiver answers 503 while the database is away, and every
delivery the provider retries afterwards lands exactly once."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from litestar.testing import TestClient
from sqlalchemy import text

from app import metrics
from foundation.settings import load_settings, normalise_database_url
from migrations import runner as migrate
from reconciliation.store.db import make_engine, make_session_factory
from tests.conftest import postgres_admin_url
from tests.integration.app.receiver_helpers import (
    PATH,
    SECRET,
    event_body,
    signed_headers,
    stored,
)

pytestmark = pytest.mark.postgres


@pytest.fixture
def outage_db(postgres_template_url: str) -> Iterator[tuple[str, Callable[[bool], None]]]:
    """A database of its own, and a switch that refuses or allows connections to it."""
    admin_url = postgres_admin_url()
    assert admin_url is not None
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"recon_outage_{uuid.uuid4().hex[:8]}"
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


def unavailable_count() -> float:
    value = metrics.REGISTRY.get_sample_value(
        "recon_webhook_deliveries_total", {"outcome": "db_unavailable"}
    )
    return value or 0.0


def test_unreachable_database_is_503_never_2xx(
    make_client: Callable[..., TestClient[object]], base_env: dict[str, str]
) -> None:
    settings = load_settings(
        {
            **base_env,
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nowhere",
            "RECON_WEBHOOK_SECRETS": SECRET,
        }
    )
    client = make_client(settings)
    before = unavailable_count()
    body = event_body()
    response = client.post(PATH, content=body, headers=signed_headers(body))
    assert response.status_code == 503
    assert response.json()["error"] == "db_unavailable"
    assert "nothing was stored" in response.json()["detail"]
    assert response.headers["retry-after"] == "5"
    assert unavailable_count() == before + 1
    ready = client.get("/ready")
    assert ready.status_code == 503
    assert ready.json()["store"].startswith("not writable")


def test_outage_answers_503_and_nothing_is_lost_once_it_returns(
    make_client: Callable[..., TestClient[object]],
    base_env: dict[str, str],
    outage_db: tuple[str, Callable[[bool], None]],
) -> None:
    url, available = outage_db
    settings = load_settings({**base_env, "DATABASE_URL": url, "RECON_WEBHOOK_SECRETS": SECRET})
    client = make_client(settings)

    def send(ids: list[str]) -> list[int]:
        return [
            client.post(
                PATH,
                content=event_body(event_id=i),
                headers=signed_headers(event_body(event_id=i), delivery_id=i),
            ).status_code
            for i in ids
        ]

    before = [str(uuid.uuid4()) for _ in range(3)]
    during = [str(uuid.uuid4()) for _ in range(5)]
    assert send(before) == [200] * 3

    available(False)
    try:
        assert send(during) == [503] * 5
        assert client.get("/ready").status_code == 503
    finally:
        available(True)

    # The provider retries what was refused; the database is back.
    assert send(during) == [200] * 5
    assert send(before) == [200] * 3  # late duplicates are acknowledged, not stored again
    engine = make_engine(url)
    try:
        ids = sorted(r.delivery_id for r in stored(make_session_factory(engine)))
    finally:
        engine.dispose()
    assert ids == sorted(before + during)
