"""Provider text in the operator's terminal and files, and what the web process serves.

Before: an id or subject with `[/]` in it made the text report fail (500 from the API, a crash
from the CLI) for as long as the item was listed, `[link=...]` put a hyperlink in the
terminal, and escape bytes reached it raw; `recon report --output` followed symlinks, wrote a
file named `-`, and answered a missing folder with a traceback; the state folder and the SQLite
store were created readable by every local user; /schema/swagger loaded scripts from a CDN.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import httpx

from reconciliation.alerts.lifecycle import raise_alert
from reconciliation.store.db import make_engine, make_session_factory, transaction
from tests.integration.app.receiver_helpers import ADMIN, signed_headers
from tests.security.conftest import WebProcess, run_recon
from tests.security.console_client import signed_in_client

#: What a provider-chosen value could carry: Rich markup that closes what is not open, a
#: terminal hyperlink in markup and as an OSC 8 escape, and a screen-clearing CSI sequence.
HOSTILE_SUBJECT = (
    "ref [/] [link=https://evil.example]pay here[/link] :warning: "
    "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \x1b[2J"
)


def _alert_with_hostile_subject(
    database_url: str,
    subject: str = HOSTILE_SUBJECT,
    fingerprint: str = "security-test-hostile-subject",
) -> None:
    """An open alert whose subject and evidence carry text a provider chose."""
    engine = make_engine(database_url)
    try:
        with transaction(make_session_factory(engine)) as session:
            raise_alert(
                session,
                kind="amount_mismatch",
                severity="high",
                subject=subject,
                fingerprint=fingerprint,
                evidence={"reference": subject},
            )
    finally:
        engine.dispose()


def _assert_shown_not_obeyed(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text
    assert "[/] [link=https://evil.example]pay here[/link] :warning:" in text
    assert "\\x1b]8;;https://evil.example\\x07click" in text


def test_hostile_provider_text_is_shown_not_obeyed_by_the_text_report(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    _alert_with_hostile_subject(security_env["DATABASE_URL"])
    result = run_recon(security_env, "report", "--width", "400")
    assert result.returncode == 0, result.stderr
    _assert_shown_not_obeyed(result.stdout)
    # No embedded workers: their reconciliation pass would resolve the planted alert.
    web = web_process(security_env, "--no-workers")
    response = httpx.get(
        f"{web.base}/reports/reconciliation",
        params={"format": "text"},
        headers=ADMIN,
        timeout=60,
    )
    assert response.status_code == 200, response.text
    _assert_shown_not_obeyed(response.text)


def test_cli_listings_escape_control_characters(security_env: dict[str, str]) -> None:
    _alert_with_hostile_subject(security_env["DATABASE_URL"])
    result = run_recon(security_env, "alerts", "list")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b[2J" in result.stdout


def test_report_output_refuses_a_symlink_and_writes_in_one_step(
    security_env: dict[str, str], tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "report.txt"
    link.symlink_to(victim)
    result = run_recon(security_env, "report", "--output", str(link))
    assert result.returncode == 2
    assert result.stderr.startswith(f"recon: {link} is a symbolic link")
    assert victim.read_text() == "precious" and link.is_symlink()

    target = tmp_path / "out" / "report.html"
    result = run_recon(security_env, "report", "--format", "html", "--output", str(target))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"recon: cannot write {target}: the folder {target.parent} does not exist"
    ]
    assert "Traceback" not in result.stderr

    target.parent.mkdir()
    target.write_text("old report")
    result = run_recon(security_env, "report", "--format", "html", "--output", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_text().lstrip().lower().startswith("<!doctype html")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]  # no temp left
    # The owner's alone, like the store it was read from (before: 0644).
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_report_output_dash_is_standard_output(
    security_env: dict[str, str], tmp_path: Path
) -> None:
    result = run_recon(security_env, "report", "--format", "json", "--output", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.lstrip().startswith("{")
    assert not (tmp_path / "-").exists()


def test_a_fresh_state_folder_and_store_are_private(
    security_env: dict[str, str], tmp_path: Path, web_process: Callable[..., WebProcess]
) -> None:
    state = tmp_path / "fresh-state"
    env = {
        **security_env,
        "RECON_STATE_DIR": str(state),
        "DATABASE_URL": f"sqlite:///{state / 'recon.db'}",
    }
    del env["RECON_SECRET_KEY"]  # the embedded default writes its key file here too
    old_umask = os.umask(0o022)
    try:
        result = run_recon(env, "db", "upgrade")
    finally:
        os.umask(old_umask)
    assert result.returncode == 0, result.stderr
    web_process(env)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "recon.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((state / "secret.key").stat().st_mode) == 0o600


def test_the_schema_is_served_without_any_cdn_renderer(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env)
    for path in ("/schema/swagger", "/schema/redoc", "/schema/elements", "/schema/rapidoc"):
        assert httpx.get(web.base + path, timeout=30).status_code == 404, path
    schema = httpx.get(f"{web.base}/schema/openapi.json", timeout=30)
    assert schema.status_code == 200 and "/deliveries" in schema.json()["paths"]
    root = httpx.get(f"{web.base}/schema", timeout=30)
    assert root.status_code == 200 and "<script" not in root.text
    assert httpx.get(f"{web.base}/schema/openapi.yaml", timeout=30).status_code == 200


def test_deliveries_show_escapes_raw_bytes_of_a_delivery(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env, "--no-workers")
    # Signed by the provider (or whoever holds the secret), but its bytes are hostile: raw
    # escape sequences are not valid JSON, so it is quarantined with its exact bytes.
    body = b'{"id":"evt_esc","event":"\x1b]8;;https://evil.example\x07x\x1b]8;;\x07\x1b[2J"}'
    response = httpx.post(
        web.base + "/webhooks/company",
        content=body,
        headers=signed_headers(body, delivery_id="evt_esc"),
        timeout=30,
    )
    assert response.status_code == 200
    assert response.json()["outcome"] == "quarantined"
    rows = httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30).json()["items"]
    result = run_recon(security_env, "deliveries", "show", str(rows[0]["id"]))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]8;;https://evil.example\\x07x" in result.stdout


def test_the_console_shows_bidi_zero_width_and_escape_characters_as_escapes(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    """Before (third wave): a provider-chosen text with a right-to-left override, a zero-width
    space or an ESC reached the operator's screen raw (HTML escaping leaves them alone)."""
    hostile = "ref \u202eevil\u200b\x1b[2J"
    _alert_with_hostile_subject(security_env["DATABASE_URL"], hostile, "security-test-bidi-subject")
    web = web_process(security_env, "--no-workers")
    with signed_in_client(web.base) as client:
        page = client.get("/console/alerts")
    assert page.status_code == 200, page.text[:300]
    for raw in ("\u202e", "\u200b", "\x1b"):
        assert raw not in page.text
    assert "ref \\u202eevil\\u200b\\x1b[2J" in page.text
