"""No 2xx without a commit: the receiver answers 503 while the database is away, and every
delivery the provider retries afterwards lands exactly once."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from litestar.testing import TestClient

from app import metrics
from foundation import load_settings
from reconciliation.store.db import make_engine, make_session_factory
from tests.integration.app.receiver_helpers import (
    PATH,
    SECRET,
    event_body,
    signed_headers,
    stored,
)

pytestmark = pytest.mark.postgres


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
    switchable_postgres: tuple[str, Callable[[bool], None]],
) -> None:
    url, available = switchable_postgres
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
