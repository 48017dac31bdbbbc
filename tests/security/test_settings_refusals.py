"""Settings an attacker would love, refused at start-up with one line naming the variable.

Before: `RECON_ALERT_WEBHOOK_SECRET='whsec_!!!!'` signed alerts with an empty key; the
Makefile's demo admin token (or any short one) guarded a live provider's money; a token with a
trailing line break made every request 401; `recon config check` printed query-string
passwords and Slack-style webhook URLs whole.
"""

from __future__ import annotations

import base64
import hashlib
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
        # Third wave: long and of many characters, but a keyboard run and an alphabet step.
        ("qwertyuiopasdfghjklzxcvbnmQWERTYUIOP", "follows a pattern"),
        ("acegikmoqsuwyACEGIKMOQSUWY02468bdf", "follows a pattern"),
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


#: A strong credential of each kind, as the docs tell operators to make them.
STRONG_TOKEN = "Zq3vN8xTc1LwE5rYh0KdPs7uGj2mBa9fV4oXiQ6tHnS"
#: 32 bytes of a hash: as random as a key needs to look (a counting sequence is now refused).
STRONG_WHSEC = "whsec_" + base64.b64encode(hashlib.sha256(b"recon strong key").digest()).decode()


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("a" * 32, "has too little randomness"),
        ("ab" * 20, "has too little randomness"),
        ("0123456789abcdef" * 2, "follows a pattern"),
        ("abcdefghijklmnopqrstuvwxyzABCDEF", "follows a pattern"),
    ],
)
def test_a_long_but_patterned_admin_token_is_refused_when_live(
    security_env: dict[str, str], token: str, problem: str
) -> None:
    # Before: only the length was checked, so 32 times `a` guarded a live provider.
    live = {**security_env, **LIVE_PROVIDER, "RECON_ADMIN_TOKEN": token}
    result = run_recon(live, "config", "check")
    assert result.returncode == 2, result.stdout
    assert f"RECON_ADMIN_TOKEN {problem}" in result.stderr
    assert token not in result.stderr
    strong = {**live, "RECON_ADMIN_TOKEN": STRONG_TOKEN}
    assert run_recon(strong, "config", "check").returncode == 0


@pytest.mark.parametrize(
    "gateway",
    [
        {"RECON_GATEWAY_URL": "http://127.0.0.1:3128"},  # a local egress proxy
        {"RECON_GATEWAY_URL": "http://localhost:8080"},
        {"RECON_GATEWAY_URL": ""},  # no URL: the sandbox's address by default
    ],
    ids=["loopback-proxy", "localhost", "no-url"],
)
def test_a_live_key_is_live_whatever_the_gateway_url(
    security_env: dict[str, str], gateway: dict[str, str]
) -> None:
    # Before: a loopback (or absent) gateway URL made recon take a live key for a sandbox, and
    # the published demo admin token was accepted.
    env = {
        **security_env,
        **gateway,
        "RECON_GATEWAY_API_KEY": "ak_live_0123456789",
        "RECON_ADMIN_TOKEN": "demo-admin-token-change-me",
    }
    result = run_recon(env, "config", "check")
    assert result.returncode == 2
    assert "RECON_ADMIN_TOKEN is a published demo value and the provider is live" in result.stderr


def test_the_provider_mode_can_be_set_explicitly(security_env: dict[str, str]) -> None:
    demo_token = {**security_env, "RECON_ADMIN_TOKEN": "demo-admin-token-change-me"}
    # A sandbox whose keys do not carry the test prefix is declared a sandbox...
    sandbox = {
        **demo_token,
        **LIVE_PROVIDER,
        "RECON_GATEWAY_API_KEY": "sandbox-key-0123456789",
        "RECON_PROVIDER_MODE": "sandbox",
    }
    checked = run_recon(sandbox, "config", "check")
    assert checked.returncode == 0, checked.stderr
    mode = [line for line in checked.stdout.splitlines() if line.startswith("RECON_PROVIDER_MODE")]
    assert mode and "sandbox" in mode[0], checked.stdout
    # ...and a deploy can insist on live rules even with a test key.
    live = {**demo_token, "RECON_PROVIDER_MODE": "live"}
    assert "published demo value" in run_recon(live, "config", "check").stderr
    typo = run_recon({**demo_token, "RECON_PROVIDER_MODE": "production"}, "config", "check")
    assert "RECON_PROVIDER_MODE='production' is not valid: expected one of live, sandbox" in (
        typo.stderr
    )


@pytest.mark.parametrize(
    ("secrets", "problem"),
    [
        ("x", "entry 1 is too weak for a live provider: a plain secret is too short"),
        (f"{STRONG_WHSEC},hunter2", "entry 2 is too weak for a live provider: a plain secret"),
        ("whsec_" + base64.b64encode(b"tiny").decode(), "entry 1 is too weak"),
        ("a" * 40, "entry 1 is too weak for a live provider: a plain secret has too little"),
        # Third wave: the right length, no randomness at all.
        ("whsec_" + base64.b64encode(bytes(24)).decode(), "entry 1 is too weak"),
        ("whsk_" + base64.b64encode(bytes(32)).decode(), "entry 1 is too weak"),
    ],
)
def test_a_weak_webhook_secret_is_refused_when_live(
    security_env: dict[str, str], secrets: str, problem: str
) -> None:
    # Before: RECON_WEBHOOK_SECRETS=x was accepted against a live gateway.
    live = {
        **security_env,
        **LIVE_PROVIDER,
        "RECON_ADMIN_TOKEN": STRONG_TOKEN,
        "RECON_WEBHOOK_SECRETS": secrets,
    }
    result = run_recon(live, "config", "check")
    assert result.returncode == 2
    assert f"RECON_WEBHOOK_SECRETS {problem}" in result.stderr
    for secret in secrets.split(","):
        assert secret not in result.stderr
    # Strong ones are fine live; against the sandbox anything goes.
    strong = {**live, "RECON_WEBHOOK_SECRETS": f"{STRONG_WHSEC},{STRONG_TOKEN}"}
    assert run_recon(strong, "config", "check").returncode == 0
    sandbox = {**security_env, "RECON_WEBHOOK_SECRETS": secrets}
    assert run_recon(sandbox, "config", "check").returncode == 0


def test_a_sandbox_mode_with_a_live_key_is_refused(security_env: dict[str, str]) -> None:
    """Before: RECON_PROVIDER_MODE=sandbox beside an ak_live_ key accepted the admin token
    `admin` without a word; the key moves real money whatever the mode says."""
    env = {
        **security_env,
        **LIVE_PROVIDER,
        "RECON_PROVIDER_MODE": "sandbox",
        "RECON_ADMIN_TOKEN": "admin",
    }
    result = run_recon(env, "config", "check")
    assert result.returncode == 2, result.stdout
    assert "RECON_PROVIDER_MODE=sandbox contradicts RECON_GATEWAY_API_KEY" in result.stderr
    assert LIVE_PROVIDER["RECON_GATEWAY_API_KEY"] not in result.stderr
    # Live rules with a test key are only stricter: allowed, and config check says so.
    stricter = {
        **security_env,
        "RECON_PROVIDER_MODE": "live",
        "RECON_GATEWAY_API_KEY": "ak_test_0123456789",
        "RECON_ADMIN_TOKEN": STRONG_TOKEN,
    }
    checked = run_recon(stricter, "config", "check")
    assert checked.returncode == 0, checked.stderr
    assert "live rules for a test key" in checked.stdout


def test_a_zero_alert_signing_key_stops_start_up(security_env: dict[str, str]) -> None:
    zeros = "whsec_" + base64.b64encode(bytes(24)).decode()
    live = {**security_env, **LIVE_PROVIDER, "RECON_ADMIN_TOKEN": STRONG_TOKEN}
    result = run_recon({**live, "RECON_ALERT_WEBHOOK_SECRET": zeros}, "config", "check")
    assert result.returncode == 2
    assert "too little randomness" in result.stderr
