"""One typed settings object, read from the environment once at start-up.

Every process (web, worker, scheduler, CLI) takes its whole configuration from the environment,
so a deploy is a set of variables and nothing else. Validation happens here, all at once, so a
bad value stops the process before it half-starts; `ConfigError` carries one line naming the
variable and what it expects, and the CLI prints exactly that line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Final, TypeVar
from urllib.parse import urlsplit

from foundation.secret import Secret

T = TypeVar("T")

#: Where the embedded default keeps its SQLite file and its generated encryption key.
DEFAULT_STATE_DIR: Final = ".recon"

#: Signature schemes the receiver understands; see docs/decisions.md and upstream/signatures/.
SIGNATURE_SCHEMES: Final = (
    "standard",
    "ed25519",
    "hmac-sha256-hex",
    "hmac-sha256-base64",
    "hmac-sha512-hex",
    "hmac-sha512-base64",
)


class ConfigError(Exception):
    """A configuration value is missing or malformed; the message is one line for an operator."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective configuration of a recon process.

    Secrets are wrapped in `Secret`, so printing this object, logging it or putting it in an
    exception never shows them.
    """

    database_url: str
    redis_url: str | None
    gateway_url: str
    gateway_api_key: Secret
    company_url: str
    company_api_key: Secret
    company_app_id: str
    public_url: str
    secret_keys: tuple[Secret, ...]
    admin_token: Secret
    state_dir: Path
    log_format: str
    log_level: str
    port: int
    webhook_path: str
    webhook_secrets: tuple[Secret, ...]
    signature_scheme: str
    signature_header: str
    signature_tolerance_seconds: int
    webhook_body_limit_bytes: int
    webhook_rotation_overlap_seconds: int
    alert_webhook_url: str | None
    alert_webhook_secret: Secret | None
    gateway_requests_per_second: float
    activity_page_size: int
    poll_activity_seconds: float
    poll_transfers_seconds: float
    transfer_backoff_first_seconds: float
    transfer_backoff_cap_seconds: float
    snapshot_balances_seconds: float
    discover_holdings_seconds: float
    check_subscription_seconds: float
    sweep_seconds: float
    reconcile_seconds: float
    delivery_grace_seconds: float
    match_window_seconds: int
    notification_grace_seconds: int
    projection_grace_seconds: int
    finality_deadline_seconds: int
    alert_cap_per_pass: int
    generated_secret_key: bool = field(default=False, compare=False)

    @property
    def embedded(self) -> bool:
        """True when no Redis is configured: one process runs web, workers and scheduler."""
        return self.redis_url is None

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith("postgresql")

    def __repr__(self) -> str:
        # Connection URLs may carry passwords; the dataclass repr would print them.
        return "Settings(" + ", ".join(f"{k}={v}" for k, v in self.masked().items()) + ")"

    def masked(self) -> dict[str, str]:
        """The effective configuration as text, secrets masked, for `recon config check`."""
        shown: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                shown[f.name] = ", ".join(str(v) for v in value) or "(none)"
            elif f.name in ("database_url", "redis_url") and value:
                shown[f.name] = mask_url_password(str(value))
            else:
                shown[f.name] = "(unset)" if value is None else str(value)
        return shown


def mask_url_password(url: str) -> str:
    """Hide the password of a connection URL; the rest is useful when debugging a deploy."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class _Reader:
    """Reads and converts variables, turning the first bad one into a one-line ConfigError."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def raw(self, name: str) -> str | None:
        value = self._env.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def text(self, name: str, default: str) -> str:
        return self.raw(name) or default

    def convert(self, name: str, default: T, parse: Callable[[str], T], expects: str) -> T:
        value = self.raw(name)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not valid: expected {expects}") from None

    def url(self, name: str, default: str | None, schemes: tuple[str, ...]) -> str | None:
        value = self.raw(name)
        if value is None:
            return default
        parts = urlsplit(value)
        if parts.scheme not in schemes or not (parts.netloc or parts.path):
            shown = mask_url_password(value)
            raise ConfigError(
                f"{name}={shown!r} is not valid: expected a URL starting with "
                + " or ".join(f"{s}://" for s in schemes)
            )
        return value.rstrip("/")

    def secret(self, name: str, default: str | None = None) -> Secret | None:
        # Not stripped: a stray space in a credential is reported, not silently mended.
        value = self._env.get(name) or default
        return None if value is None else Secret(value, name=name)

    def secrets(self, name: str) -> tuple[Secret, ...]:
        value = self.raw(name)
        if value is None:
            return ()
        return tuple(Secret(v.strip(), name=name) for v in value.split(",") if v.strip())

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(name, default)
        if value not in choices:
            raise ConfigError(
                f"{name}={value!r} is not valid: expected one of {', '.join(choices)}"
            )
        return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(text)
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise ValueError(text)
    return value


def normalise_database_url(url: str) -> str:
    """Pin the driver so `postgres://` and `postgresql://` URLs from a PaaS just work."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Validate the whole environment into Settings, or raise ConfigError naming one variable."""
    from foundation.secret_key import resolve_secret_keys

    r = _Reader(os.environ if env is None else env)
    state_dir = Path(r.text("RECON_STATE_DIR", DEFAULT_STATE_DIR))
    database_url = r.url(
        "DATABASE_URL",
        f"sqlite:///{state_dir / 'recon.db'}",
        ("sqlite", "postgres", "postgresql", "postgresql+psycopg"),
    )
    assert database_url is not None
    sandbox_root = "http://127.0.0.1:8080"
    gateway_url = r.url("RECON_GATEWAY_URL", sandbox_root, ("http", "https"))
    company_url = r.url("RECON_COMPANY_URL", gateway_url, ("http", "https"))
    public_url = r.url("RECON_PUBLIC_URL", "http://127.0.0.1:8000", ("http", "https"))
    assert gateway_url and company_url and public_url
    secret_keys, generated = resolve_secret_keys(r.raw("RECON_SECRET_KEY"), state_dir)
    app_id = r.text("RECON_COMPANY_APP_ID", "6f1c2a34-0000-4000-8000-00000000c0de")
    _require_uuid("RECON_COMPANY_APP_ID", app_id)
    alert_secret = r.secret("RECON_ALERT_WEBHOOK_SECRET")
    if alert_secret is not None and not alert_secret.reveal().startswith("whsec_"):
        raise ConfigError("RECON_ALERT_WEBHOOK_SECRET is not valid: expected a whsec_ secret")
    # Waits between polls of a transfer still awaiting finality: first, then doubling to a cap.
    backoff_first = _interval(r, "RECON_TRANSFER_BACKOFF_FIRST_SECONDS", 2.0)
    backoff_cap = _interval(r, "RECON_TRANSFER_BACKOFF_CAP_SECONDS", 300.0)
    if backoff_cap < backoff_first:
        raise ConfigError(
            f"RECON_TRANSFER_BACKOFF_CAP_SECONDS={backoff_cap:g} is not valid: it must be at least "
            f"RECON_TRANSFER_BACKOFF_FIRST_SECONDS ({backoff_first:g})"
        )
    webhook_path = r.text("RECON_WEBHOOK_PATH", "/webhooks/company")
    if not webhook_path.startswith("/"):
        raise ConfigError(
            f"RECON_WEBHOOK_PATH={webhook_path!r} is not valid: expected a path starting with /"
        )
    admin_token = r.secret("RECON_ADMIN_TOKEN")
    if admin_token is None:
        raise ConfigError(
            "RECON_ADMIN_TOKEN is missing: set a long random token that guards the reports, "
            "alerts and inbox API (for example: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return Settings(
        database_url=normalise_database_url(database_url),
        redis_url=r.url("REDIS_URL", None, ("redis", "rediss", "unix")),
        gateway_url=gateway_url,
        gateway_api_key=_required_secret(r, "RECON_GATEWAY_API_KEY"),
        company_url=company_url,
        company_api_key=_required_secret(r, "RECON_COMPANY_API_KEY"),
        company_app_id=app_id,
        public_url=public_url,
        secret_keys=secret_keys,
        admin_token=admin_token,
        state_dir=state_dir,
        log_format=r.choice("RECON_LOG_FORMAT", "auto", ("auto", "json", "console")),
        log_level=r.choice("RECON_LOG_LEVEL", "info", ("debug", "info", "warning", "error")),
        port=r.convert("PORT", 8000, _port, "a TCP port number 1-65535"),
        webhook_path=webhook_path,
        webhook_secrets=r.secrets("RECON_WEBHOOK_SECRETS"),
        signature_scheme=r.choice("RECON_SIGNATURE_SCHEME", "standard", SIGNATURE_SCHEMES),
        signature_header=r.text("RECON_SIGNATURE_HEADER", "X-Signature"),
        signature_tolerance_seconds=r.convert(
            "RECON_SIGNATURE_TOLERANCE_SECONDS", 300, _positive_int, "a whole number of seconds > 0"
        ),
        webhook_body_limit_bytes=r.convert(
            "RECON_WEBHOOK_BODY_LIMIT_BYTES",
            256 * 1024,
            _positive_int,
            "a whole number of bytes > 0",
        ),
        webhook_rotation_overlap_seconds=r.convert(
            "RECON_WEBHOOK_ROTATION_OVERLAP_SECONDS",
            86400,
            _positive_int,
            "a whole number of seconds > 0",
        ),
        alert_webhook_url=r.url("RECON_ALERT_WEBHOOK_URL", None, ("http", "https")),
        alert_webhook_secret=alert_secret,
        gateway_requests_per_second=r.convert(
            "RECON_GATEWAY_RPS", 50.0, _positive_float, "a number of requests per second > 0"
        ),
        activity_page_size=r.convert(
            "RECON_ACTIVITY_PAGE_SIZE",
            200,
            _positive_int,
            "a whole number of postings per page > 0",
        ),
        poll_activity_seconds=_interval(r, "RECON_POLL_ACTIVITY_SECONDS", 15.0),
        poll_transfers_seconds=_interval(r, "RECON_POLL_TRANSFERS_SECONDS", 5.0),
        transfer_backoff_first_seconds=backoff_first,
        transfer_backoff_cap_seconds=backoff_cap,
        snapshot_balances_seconds=_interval(r, "RECON_SNAPSHOT_BALANCES_SECONDS", 60.0),
        discover_holdings_seconds=_interval(r, "RECON_DISCOVER_HOLDINGS_SECONDS", 300.0),
        check_subscription_seconds=_interval(r, "RECON_CHECK_SUBSCRIPTION_SECONDS", 120.0),
        sweep_seconds=_interval(r, "RECON_SWEEP_SECONDS", 30.0),
        reconcile_seconds=_interval(r, "RECON_RECONCILE_SECONDS", 30.0),
        delivery_grace_seconds=_interval(r, "RECON_DELIVERY_GRACE_SECONDS", 60.0),
        match_window_seconds=r.convert(
            "RECON_MATCH_WINDOW_SECONDS", 3600, _positive_int, "a whole number of seconds > 0"
        ),
        notification_grace_seconds=r.convert(
            "RECON_NOTIFICATION_GRACE_SECONDS", 900, _positive_int, "a whole number of seconds > 0"
        ),
        projection_grace_seconds=r.convert(
            "RECON_PROJECTION_GRACE_SECONDS", 120, _positive_int, "a whole number of seconds > 0"
        ),
        finality_deadline_seconds=r.convert(
            "RECON_FINALITY_DEADLINE_SECONDS", 3600, _positive_int, "a whole number of seconds > 0"
        ),
        alert_cap_per_pass=r.convert(
            "RECON_ALERT_CAP_PER_PASS", 50, _positive_int, "a whole number of alerts > 0"
        ),
        generated_secret_key=generated,
    )


def _interval(r: _Reader, name: str, default: float) -> float:
    return r.convert(name, default, _positive_float, "a number of seconds > 0")


def _required_secret(r: _Reader, name: str) -> Secret:
    value = r.secret(name)
    if value is None:
        raise ConfigError(f"{name} is missing: set it to the credential issued by the provider")
    if any(c.isspace() for c in value.reveal()):
        raise ConfigError(f"{name} contains white space: check for stray spaces or line breaks")
    return value


def _require_uuid(name: str, value: str) -> None:
    import uuid

    try:
        uuid.UUID(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not valid: expected a UUID") from None
