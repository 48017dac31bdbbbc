"""The console's overview says when the gateway budget cannot hold the staleness ceiling for
the holdings known (one line, with the figures that would hold it), and says nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from tests.integration.app.test_console import sign_in
from tests.integration.reconciliation.builders import Store

UNHELD = 'id="ceiling-unheld"'


def test_the_overview_warns_of_a_ceiling_the_budget_cannot_hold(
    make_client: Callable[..., TestClient[Any]],
    recon_env: dict[str, str],
    session_factory: sessionmaker[Session],
) -> None:
    store = Store(session_factory)
    for _ in range(10):
        store.holding(locator=False)
    env = {**recon_env, "RECON_MAX_STALENESS_SECONDS": "1000"}

    short = make_client(load_settings({**env, "RECON_GATEWAY_RPS": "0.01"}))
    sign_in(short)
    page = short.get("/console").text
    assert UNHELD in page
    assert "a ceiling of at least 2,000 s" in page

    enough = make_client(load_settings({**env, "RECON_GATEWAY_RPS": "1"}))
    sign_in(enough)
    assert UNHELD not in enough.get("/console").text
