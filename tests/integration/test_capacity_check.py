"""`recon config check` says when the gateway budget cannot hold the staleness ceiling for the
holdings the store knows, with the ceiling and the budget that would hold it.

Invariant 10: cost grows with activity, not with holdings; the one cost that does grow with
holdings (reading each silent one once per ceiling) is checked against the budget.
"""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy.orm import Session, sessionmaker

from reconciliation.postings import ReadBudget, ceiling_shortfall
from tests.integration.reconciliation.builders import Store


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon", "config", "check"],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_figures_that_would_hold_the_ceiling() -> None:
    budget = ReadBudget(requests_per_second=50, ceiling_seconds=3600)
    assert ceiling_shortfall(1_000, 1_000, budget) is None  # 0.6 requests/s
    short = ceiling_shortfall(100_000, 100_000, budget)
    assert short is not None
    assert round(short.needed_per_second, 1) == 55.6
    assert short.ceiling_that_holds == 4_000 and short.budget_that_holds == 56
    assert ceiling_shortfall(100_000, 100_000, ReadBudget(56, 3600)) is None


def test_config_check_reports_a_ceiling_the_budget_cannot_hold(
    base_env: dict[str, str], db_url: str, session_factory: sessionmaker[Session]
) -> None:
    store = Store(session_factory)
    for _ in range(10):
        store.holding(locator=False)
    env = {**base_env, "DATABASE_URL": db_url, "RECON_MAX_STALENESS_SECONDS": "1000"}

    short = _check({**env, "RECON_GATEWAY_RPS": "0.01"})  # 20 reads per 1000 s: 0.02/s
    assert short.returncode == 0, short.stderr
    [warning] = [line for line in short.stdout.splitlines() if line.startswith("warning:")]
    assert "RECON_MAX_STALENESS_SECONDS=1000 cannot be held" in warning
    assert "10 holdings on 10 endpoints" in warning
    assert "a ceiling of at least 2,000 s, or a budget of at least 1 requests/s" in warning

    enough = _check({**env, "RECON_GATEWAY_RPS": "1"})
    assert enough.returncode == 0, enough.stderr
    assert "warning:" not in enough.stdout
