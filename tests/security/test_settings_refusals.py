"""Settings an attacker would love, refused at start-up with one line naming the variable.

Before: `RECON_ALERT_WEBHOOK_SECRET='whsec_!!!!'` signed alerts with an empty key; the
Makefile's demo admin token (or any short one) guarded a live provider's money; a token with a
trailing line break made every request 401; `recon config check` printed query-string
passwords and Slack-style webhook URLs whole.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN, ADMIN_TOKEN
from tests.security.conftest import WebProcess, run_recon

#: A gateway that is not on this machine, reached with a live key: the real provider.
LIVE_PROVIDER = {
    "RECON_GATEWAY_URL": "https://gateway.provider.example",
    "RECON_GATEWAY_API_KEY": "ak_live_0123456789",
}


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ("whsec_!!!!", "not base64"),
        ("whsec_", "the key decodes to 0 bytes"),
        ("whsec_" + base64.b64encode(b"short-key").decode(), "the key decodes to 9 bytes"),
        ("sk_not_a_whsec", "expected a whsec_ secret"),
    ],
)
def test_a_forgeable_alert_signing_secret_stops_start_up(
    security_env: dict[str, str], secret: str, problem: str
) -> None:
    result = run_recon({**security_env, "RECON_ALERT_WEBHOOK_SECRET": secret}, "config", "check")
    assert result.returncode == 2
    assert result.stderr.startswith("recon: RECON_ALERT_WEBHOOK_SECRET is not valid: ")
    assert problem in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("demo-admin-token-change-me", "is a published demo value"),
        ("0123456789abcdef", "is too short (16 characters)"),
    ],
)
def test_a_weak_admin_token_is_refused_against_a_live_provider(
    security_env: dict[str, str], token: str, problem: str
) -> None:
    live = {**security_env, **LIVE_PROVIDER, "RECON_ADMIN_TOKEN": token}
    result = run_recon(live, "config", "check")
    assert result.returncode == 2
    assert f"RECON_ADMIN_TOKEN {problem}" in result.stderr
    assert token not in result.stderr
    # Against the sandbox (loopback gateway) the same token is fine for a first run.
    assert (
        run_recon({**security_env, "RECON_ADMIN_TOKEN": token}, "config", "check").returncode == 0
    )
    # So is a test key, wherever the gateway is.
    test_key = {**live, "RECON_GATEWAY_API_KEY": "ak_test_0123456789"}
    assert run_recon(test_key, "config", "check").returncode == 0


def test_an_admin_token_read_from_a_file_with_its_line_break_still_works(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process({**security_env, "RECON_ADMIN_TOKEN": f"{ADMIN_TOKEN}\n"})
    assert httpx.get(f"{web.base}/deliveries", headers=ADMIN, timeout=30).status_code == 200
    assert httpx.get(f"{web.base}/deliveries", timeout=30).status_code == 401


def test_config_check_masks_passwords_in_the_query_and_webhook_url_tokens(
    security_env: dict[str, str],
) -> None:
    env = {
        **security_env,
        "DATABASE_URL": "postgresql://recon@db.internal:5432/recon?password=pg-pass-9f3a&sslmode=require",
        "RECON_ALERT_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/slack-token-7c1e",
    }
    result = run_recon(env, "config", "check")
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    assert "pg-pass-9f3a" not in shown
    assert "slack-token-7c1e" not in shown and "B000" not in shown
    assert "db.internal:5432/recon?password=***&sslmode=require" in shown
    assert "https://hooks.slack.com/***" in shown
