"""The console shows amounts of any size exactly, in every unit.

A holding in an on-chain unit whose postings sum past 2**63 (on SQLite, a 64-bit sum() failed
every page built on it), its balance check and its drift alert are drawn from the store, on
both databases, with the unit's configured exponent.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from foundation import Settings, load_settings
from reconciliation import run_pass
from reconciliation.store.models import Alert
from tests.integration.app.test_console import sign_in
from tests.integration.reconciliation.builders import Store, at

UNIT = "token:ETH@ethereum"
BIG = 10**30


@pytest.fixture
def settings(recon_env: dict[str, str]) -> Settings:
    return load_settings({**recon_env, "RECON_UNIT_EXPONENTS": f"{UNIT}=18"})


def test_a_holding_past_two_to_the_63_reads_exactly(
    client: TestClient[Any], factory: sessionmaker[Session], settings: Settings
) -> None:
    store = Store(factory)
    holding = store.holding(currency=UNIT)
    store.cursor(holding, polled=at(3_600))
    for n in range(3):
        store.posting(holding, BIG + n, currency=UNIT, posted=at(n))
    # The provider's balance says 5 base units more than the postings: a drift of 5.
    store.snapshot(holding, 3 * BIG + 3 + 5, observed=at(60))
    run_pass(factory, settings, now=at(3_600) + timedelta(seconds=1))
    with factory() as session:
        [alert] = session.query(Alert).filter(Alert.kind == "balance_mismatch").all()
    sign_in(client)
    page = client.get(f"/console/holdings/{holding.id}")
    assert page.status_code == 200
    assert "3,000,000,000,000.000000000000000008 token:ETH@ethereum" in page.text
    assert "1,000,000,000,000.000000000000000002 token:ETH@ethereum" in page.text
    assert "+0.000000000000000005 token:ETH@ethereum" in page.text
    shown = client.get(f"/console/alerts/{alert.id}")
    assert shown.status_code == 200
    assert "3,000,000,000,000.000000000000000003 token:ETH@ethereum" in shown.text
