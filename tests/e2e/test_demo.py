"""The main job, end to end: `recon demo` on the embedded default and under the Procfile.

Both run real processes (sandbox, web, workers, scheduler) and pass only when recon reports
exactly the faults the scenario injected; these tests check the command's verdict, its exit
status and the report it leaves behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from reconciliation.store.db import make_engine

REPO = Path(__file__).resolve().parents[2]

#: Variables of the outer environment that must not leak into a demo run.
SCRUBBED = ("DATABASE_URL", "REDIS_URL", "PORT", "RECON_STATE_DIR")


#: The one recon variable a demo run takes from the outer environment: which provider its
#: sandbox plays (`make test-variants` runs the demo under each).
PLAYED = "RECON_SANDBOX_VARIANT"


def _demo_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in SCRUBBED and (k == PLAYED or not k.startswith("RECON_"))
    }
    env.update(
        {
            "RECON_STATE_DIR": str(tmp_path / "state"),
            "RECON_GATEWAY_API_KEY": "ak_test_recon",
            "RECON_COMPANY_API_KEY": "ck_test_recon",
            "RECON_ADMIN_TOKEN": "e2e-admin-token-0123456789",
        }
    )
    env.update(extra)
    return env


def _run_demo(env: dict[str, str], report: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon", "demo", "--report", str(report), *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _assert_demo_passed(result: subprocess.CompletedProcess[str], report: Path) -> None:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "recon found exactly the injected faults" in result.stdout
    # Counted, not compared as kinds: one open alert per injected fault and nothing else.
    assert "4 open alerts for 4 injected faults" in result.stdout
    for kind in (
        "posting_without_notification",
        "amount_mismatch",
        "delivery_body_conflict",
        "finality_overdue",
    ):
        assert kind in result.stdout
    # The wallet in 10^-18 units: two credits whose sum is past 2**63, balanced to the last unit
    # (balance, postings sum and no drift) and shown in major units by its configured exponent.
    # Found in its holding's row (the balance rows come once a snapshot was checked), whatever
    # width the terminal wraps the tables at, and never as raw minor units: the configured
    # exponent is used. Likewise in the HTML report.
    html = report.read_text(encoding="utf-8")
    for shown in (result.stdout, html):
        assert "12.500000000000000001" in shown, "the wallet's exact sum"
        assert "minor units of token:ETH" not in shown
    assert "<svg" in html
    assert not re.search(r"""(src|href)\s*=\s*["']https?://""", html)


@pytest.mark.slow
@pytest.mark.provider_variant  # the demo's own sandbox plays RECON_SANDBOX_VARIANT
def test_demo_on_the_embedded_default(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    result = _run_demo(_demo_env(tmp_path), report)
    _assert_demo_passed(result, report)
    assert "web with embedded workers" in result.stderr


@pytest.fixture
def fresh_postgres(postgres_template_url: str) -> Iterator[str]:
    """An empty database (the demo refuses one that already holds recon data)."""
    base, _, _ = postgres_template_url.rpartition("/")
    name = f"recon_e2e_{uuid.uuid4().hex[:8]}"
    admin = make_engine(postgres_template_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield f"{base}/{name}"
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.provider_variant  # the demo's own sandbox plays RECON_SANDBOX_VARIANT
def test_procfile_runs_release_web_worker_scheduler(
    tmp_path: Path, fresh_postgres: str, flushed_redis_url: str
) -> None:
    report = tmp_path / "report.html"
    env = _demo_env(tmp_path, DATABASE_URL=fresh_postgres, REDIS_URL=flushed_redis_url)
    result = _run_demo(env, report, "--procfile", str(REPO / "Procfile"))
    _assert_demo_passed(result, report)
    assert "Procfile: web, worker, scheduler" in result.stderr


@pytest.mark.postgres
def test_demo_refuses_a_store_that_already_holds_data(tmp_path: Path, fresh_postgres: str) -> None:
    from migrations import runner as migrate

    migrate.upgrade(fresh_postgres)
    engine = make_engine(fresh_postgres)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO alerts (kind, severity, subject, fingerprint, evidence, state, "
                "opened_at, last_seen_at, occurrences) VALUES ('x', 'low', 's', 'f', '{}', "
                "'open', now(), now(), 1)"
            )
        )
    engine.dispose()
    result = _run_demo(_demo_env(tmp_path, DATABASE_URL=fresh_postgres), tmp_path / "r.html")
    assert result.returncode == 1
    assert "the demo needs an empty store" in result.stdout + result.stderr
