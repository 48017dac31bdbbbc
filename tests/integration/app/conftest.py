"""Fixtures of the receiver's integration tests: settings on both databases, the app in-process."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import Settings, load_settings
from tests.integration.app.receiver_helpers import ADMIN_TOKEN, SECRET


@pytest.fixture
def recon_env(base_env: dict[str, str], db_url: str) -> dict[str, str]:
    """A valid environment on the parametrized store, with one configured webhook secret."""
    return {
        **base_env,
        "DATABASE_URL": db_url,
        "RECON_WEBHOOK_SECRETS": SECRET,
        "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
    }


@pytest.fixture
def settings(recon_env: dict[str, str]) -> Settings:
    return load_settings(recon_env)


@pytest.fixture
def enqueued() -> list[int]:
    """Row ids the app handed to `enqueue`, in order."""
    return []


@pytest.fixture
def make_client(
    enqueued: list[int],
) -> Iterator[Callable[..., TestClient[object]]]:
    """Start an app (lifespan included) for given settings; stopped at the end of the test."""
    clients: list[TestClient[object]] = []

    def start(settings: Settings, **options: object) -> TestClient[object]:
        options.setdefault("enqueue", enqueued.extend)
        options.setdefault("self_register", False)
        client: TestClient[object] = TestClient(create_app(settings, **options))  # type: ignore[arg-type]
        client.__enter__()
        clients.append(client)
        return client

    yield start
    for client in reversed(clients):
        client.__exit__(None, None, None)


@pytest.fixture
def client(
    make_client: Callable[..., TestClient[object]], settings: Settings
) -> TestClient[object]:
    return make_client(settings)


@pytest.fixture
def factory(client: TestClient[object]) -> sessionmaker[Session]:
    """The app's own session factory (same database, same engine)."""
    found: sessionmaker[Session] = client.app.state["session_factory"]
    return found
