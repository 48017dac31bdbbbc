"""Configuration: one typed object, or one line naming the variable that is wrong."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from foundation import ConfigError, load_settings, provision_secret_keys


def test_valid_environment_loads_typed_settings(base_env: dict[str, str]) -> None:
    settings = load_settings(base_env)
    assert settings.web.port == 8000
    assert settings.broker.embedded
    assert settings.provider.gateway_api_key.reveal() == "ak_test_recon"
    assert settings.webhooks.signature_tolerance_seconds == 300


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("PORT", "eighty", "PORT='eighty' is not valid: expected a TCP port"),
        ("PORT", "70000", "PORT='70000' is not valid"),
        ("DATABASE_URL", "mysql://x/y", "DATABASE_URL='mysql://x/y' is not valid"),
        ("REDIS_URL", "localhost:6379", "REDIS_URL='localhost:6379' is not valid"),
        (
            "RECON_COMPANY_APP_ID",
            "not-a-uuid",
            "RECON_COMPANY_APP_ID='not-a-uuid' is not valid: expected a UUID",
        ),
        (
            "RECON_SIGNATURE_SCHEME",
            "md5",
            "RECON_SIGNATURE_SCHEME='md5' is not valid: expected one of",
        ),
        (
            "RECON_SECRET_KEY",
            "short",
            "RECON_SECRET_KEY is not valid: expected comma-separated Fernet keys",
        ),
        ("RECON_GATEWAY_API_KEY", "ak_test_ recon", "RECON_GATEWAY_API_KEY contains white space"),
        ("RECON_POLL_ACTIVITY_SECONDS", "-1", "RECON_POLL_ACTIVITY_SECONDS='-1' is not valid"),
        (
            "RECON_UNIT_EXPONENTS",
            "token:USDC@ethereum=six",
            "RECON_UNIT_EXPONENTS='token:USDC@ethereum=six' is not valid: expected a "
            "comma-separated list of unit=exponent",
        ),
        (
            "RECON_UNIT_EXPONENTS",
            "NGN=3",  # ISO 4217 gives NGN's exponent; a second one would contradict it
            "RECON_UNIT_EXPONENTS='NGN=3' is not valid",
        ),
        ("RECON_UNIT_EXPONENTS", "token:ETH@ethereum=79", "RECON_UNIT_EXPONENTS="),
        (
            "RECON_TRANSFER_BACKOFF_CAP_SECONDS",
            "1",
            "RECON_TRANSFER_BACKOFF_CAP_SECONDS=1 is not valid: it must be at least "
            "RECON_TRANSFER_BACKOFF_FIRST_SECONDS (2)",
        ),
    ],
)
def test_malformed_value_names_the_variable(
    base_env: dict[str, str], name: str, value: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({**base_env, name: value})
    message = str(info.value)
    assert message.startswith(expected)
    assert "\n" not in message


@pytest.mark.parametrize(
    "name", ["RECON_GATEWAY_API_KEY", "RECON_COMPANY_API_KEY", "RECON_ADMIN_TOKEN"]
)
def test_missing_required_variable_is_named(base_env: dict[str, str], name: str) -> None:
    env = {k: v for k, v in base_env.items() if k != name}
    with pytest.raises(ConfigError, match=f"^{name} is missing"):
        load_settings(env)


def test_password_in_database_url_never_shown(base_env: dict[str, str]) -> None:
    env = {**base_env, "DATABASE_URL": "postgresql://app:hunter2hunter2@db:5432/recon"}
    settings = load_settings(env)
    assert settings.store.database_url.startswith("postgresql+psycopg://")
    assert "hunter2" not in str(settings.masked())
    assert "hunter2" not in repr(settings)


def test_embedded_default_generates_a_private_key_once(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in base_env.items() if k != "RECON_SECRET_KEY"}
    key_file = tmp_path / "state" / "secret.key"
    loaded = load_settings(env)
    assert loaded.store.secret_keys == ()
    assert not key_file.exists(), "reading the settings must not create the key file"
    first = provision_secret_keys(loaded)
    assert len(first.store.secret_keys) == 1
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    second = provision_secret_keys(load_settings(env))
    assert second.store.secret_keys == first.store.secret_keys


def _run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ["PATH"], **env}
    return subprocess.run(
        [sys.executable, "-m", "recon", *args],
        env=full,
        capture_output=True,
        text=True,
        check=False,
    )


def test_config_check_masks_every_secret(base_env: dict[str, str]) -> None:
    env = {
        **base_env,
        "RECON_WEBHOOK_SECRETS": "whsec_c2VjcmV0LW9uZS1zZWNyZXQtb25l,whsec_dHdvLXR3by10d28tdHdvLXR3bw==",
        "RECON_ALERT_WEBHOOK_SECRET": "whsec_YWxlcnQtYWxlcnQtYWxlcnQtYWxlcnQt",
        "DATABASE_URL": "postgresql://app:pa55word-xyz@127.0.0.1:1/recon",
    }
    result = _run_cli(env, "config", "check")
    assert result.returncode == 0, result.stderr
    secrets = [
        env["RECON_GATEWAY_API_KEY"],
        env["RECON_COMPANY_API_KEY"],
        env["RECON_ADMIN_TOKEN"],
        env["RECON_SECRET_KEY"],
        "pa55word-xyz",
        "c2VjcmV0LW9uZS1zZWNyZXQtb25l",
        "YWxlcnQtYWxlcnQtYWxlcnQtYWxlcnQ",
    ]
    for secret in secrets:
        assert secret not in result.stdout + result.stderr
    assert "configuration is valid" in result.stdout


def test_bad_config_stops_cli_with_one_line_and_no_traceback(base_env: dict[str, str]) -> None:
    result = _run_cli({**base_env, "PORT": "abc"}, "config", "check")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "recon: PORT='abc' is not valid: expected a TCP port number 1-65535"
    ]


def test_unreachable_database_gives_one_clear_line(base_env: dict[str, str]) -> None:
    env = {**base_env, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = _run_cli(env, "db", "upgrade")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "recon: database unreachable at postgresql+psycopg://nobody@127.0.0.1:1/none"
    )
