"""The settings, one small group per concern, each reading its own variables.

A group is a frozen dataclass with a `from_env` that validates its variables and nothing else,
so the store's settings can be read and tested without knowing the receiver's, and a process
that needs only one concern can be handed only that group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography.fernet import Fernet

from foundation.secret import Secret
from foundation.settings._env import (
    ConfigError,
    EnvReader,
    port_number,
    positive_float,
    positive_int,
)

#: Where the embedded default keeps its SQLite file and its generated encryption key.
DEFAULT_STATE_DIR: Final = ".recon"

#: Where the sandbox listens by default: a first run needs no provider URL at all.
SANDBOX_ROOT: Final = "http://127.0.0.1:8080"

#: The sandbox application id, so a first run needs no company credentials beyond the test key.
SANDBOX_APP_ID: Final = "6f1c2a34-0000-4000-8000-00000000c0de"

#: Signature schemes the receiver understands; see docs/decisions.md and upstream/signatures/.
SIGNATURE_SCHEMES: Final = (
    "standard",
    "ed25519",
    "hmac-sha256-hex",
    "hmac-sha256-base64",
    "hmac-sha512-hex",
    "hmac-sha512-base64",
)


def normalise_database_url(url: str) -> str:
    """Pin the driver so `postgres://` and `postgresql://` URLs from a PaaS just work."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Where the store is, and the keys that encrypt the secrets kept in it.

    `secret_keys` are the configured RECON_SECRET_KEY values only; without them the embedded
    default uses a key file in `state_dir`, created by an explicit step
    (`foundation.secret_key.provision_secret_keys`), never by reading the settings.
    """

    database_url: str
    state_dir: Path
    secret_keys: tuple[Secret, ...]

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith("postgresql")

    @classmethod
    def from_env(cls, r: EnvReader) -> StoreSettings:
        state_dir = Path(r.text("RECON_STATE_DIR", DEFAULT_STATE_DIR))
        database_url = r.required_url(
            "DATABASE_URL",
            f"sqlite:///{state_dir / 'recon.db'}",
            ("sqlite", "postgres", "postgresql", "postgresql+psycopg"),
        )
        return cls(
            database_url=normalise_database_url(database_url),
            state_dir=state_dir,
            secret_keys=_fernet_keys(r.raw("RECON_SECRET_KEY")),
        )


def _fernet_keys(raw: str | None) -> tuple[Secret, ...]:
    if not raw:
        return ()
    keys = tuple(k.strip() for k in raw.split(",") if k.strip())
    for key in keys:
        try:
            Fernet(key.encode())
        except ValueError:
            raise ConfigError(
                "RECON_SECRET_KEY is not valid: expected comma-separated Fernet keys "
                "(generate one with: recon config generate-key)"
            ) from None
    return tuple(Secret(k, name="RECON_SECRET_KEY") for k in keys)


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """Redis for the Dramatiq broker, the gateway rate limit and the scheduler lock, or none."""

    redis_url: str | None

    @property
    def embedded(self) -> bool:
        """True when no Redis is configured: one process runs web, workers and scheduler."""
        return self.redis_url is None

    @classmethod
    def from_env(cls, r: EnvReader) -> BrokerSettings:
        return cls(redis_url=r.url("REDIS_URL", None, ("redis", "rediss", "unix")))


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """The provider's two APIs: where they are, our credentials, and how hard we may ask."""

    gateway_url: str
    gateway_api_key: Secret
    company_url: str
    company_api_key: Secret
    company_app_id: str
    gateway_requests_per_second: float
    activity_page_size: int

    @classmethod
    def from_env(cls, r: EnvReader) -> ProviderSettings:
        gateway_url = r.required_url("RECON_GATEWAY_URL", SANDBOX_ROOT, ("http", "https"))
        return cls(
            gateway_url=gateway_url,
            gateway_api_key=r.required_secret("RECON_GATEWAY_API_KEY"),
            company_url=r.required_url("RECON_COMPANY_URL", gateway_url, ("http", "https")),
            company_api_key=r.required_secret("RECON_COMPANY_API_KEY"),
            company_app_id=r.uuid_text("RECON_COMPANY_APP_ID", SANDBOX_APP_ID),
            gateway_requests_per_second=r.convert(
                "RECON_GATEWAY_RPS", 50.0, positive_float, "a number of requests per second > 0"
            ),
            activity_page_size=r.convert(
                "RECON_ACTIVITY_PAGE_SIZE",
                200,
                positive_int,
                "a whole number of postings per page > 0",
            ),
        )


@dataclass(frozen=True, slots=True)
class WebSettings:
    """The web process: its port, the address the provider reaches it at, the admin token."""

    port: int
    public_url: str
    admin_token: Secret

    @classmethod
    def from_env(cls, r: EnvReader) -> WebSettings:
        admin_token = r.secret("RECON_ADMIN_TOKEN")
        if admin_token is None:
            raise ConfigError(
                "RECON_ADMIN_TOKEN is missing: set a long random token that guards the reports, "
                "alerts and inbox API (for example: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        return cls(
            port=r.convert("PORT", 8000, port_number, "a TCP port number 1-65535"),
            public_url=r.required_url(
                "RECON_PUBLIC_URL", "http://127.0.0.1:8000", ("http", "https")
            ),
            admin_token=admin_token,
        )


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """The receiver: where deliveries arrive, how they are signed, what is refused."""

    path: str
    secrets: tuple[Secret, ...]
    signature_scheme: str
    signature_header: str
    signature_tolerance_seconds: int
    body_limit_bytes: int
    rotation_overlap_seconds: int

    @classmethod
    def from_env(cls, r: EnvReader) -> WebhookSettings:
        path = r.text("RECON_WEBHOOK_PATH", "/webhooks/company")
        if not path.startswith("/"):
            raise ConfigError(
                f"RECON_WEBHOOK_PATH={path!r} is not valid: expected a path starting with /"
            )
        return cls(
            path=path,
            secrets=r.secrets("RECON_WEBHOOK_SECRETS"),
            signature_scheme=r.choice("RECON_SIGNATURE_SCHEME", "standard", SIGNATURE_SCHEMES),
            signature_header=r.text("RECON_SIGNATURE_HEADER", "X-Signature"),
            signature_tolerance_seconds=r.whole_seconds("RECON_SIGNATURE_TOLERANCE_SECONDS", 300),
            body_limit_bytes=r.convert(
                "RECON_WEBHOOK_BODY_LIMIT_BYTES",
                256 * 1024,
                positive_int,
                "a whole number of bytes > 0",
            ),
            rotation_overlap_seconds=r.whole_seconds(
                "RECON_WEBHOOK_ROTATION_OVERLAP_SECONDS", 86400
            ),
        )


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    """How often each periodic job runs, and how a transfer's polls back off."""

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

    @classmethod
    def from_env(cls, r: EnvReader) -> ScheduleSettings:
        # Waits between polls of a transfer still awaiting finality: first, then doubling to a cap.
        backoff_first = r.seconds("RECON_TRANSFER_BACKOFF_FIRST_SECONDS", 2.0)
        backoff_cap = r.seconds("RECON_TRANSFER_BACKOFF_CAP_SECONDS", 300.0)
        if backoff_cap < backoff_first:
            raise ConfigError(
                f"RECON_TRANSFER_BACKOFF_CAP_SECONDS={backoff_cap:g} is not valid: it must be at "
                f"least RECON_TRANSFER_BACKOFF_FIRST_SECONDS ({backoff_first:g})"
            )
        return cls(
            poll_activity_seconds=r.seconds("RECON_POLL_ACTIVITY_SECONDS", 15.0),
            poll_transfers_seconds=r.seconds("RECON_POLL_TRANSFERS_SECONDS", 5.0),
            transfer_backoff_first_seconds=backoff_first,
            transfer_backoff_cap_seconds=backoff_cap,
            snapshot_balances_seconds=r.seconds("RECON_SNAPSHOT_BALANCES_SECONDS", 60.0),
            discover_holdings_seconds=r.seconds("RECON_DISCOVER_HOLDINGS_SECONDS", 300.0),
            check_subscription_seconds=r.seconds("RECON_CHECK_SUBSCRIPTION_SECONDS", 120.0),
            sweep_seconds=r.seconds("RECON_SWEEP_SECONDS", 30.0),
            reconcile_seconds=r.seconds("RECON_RECONCILE_SECONDS", 30.0),
            delivery_grace_seconds=r.seconds("RECON_DELIVERY_GRACE_SECONDS", 60.0),
        )


@dataclass(frozen=True, slots=True)
class MatchingSettings:
    """The matching window and how long an absence is tolerated before it is drift."""

    match_window_seconds: int
    notification_grace_seconds: int
    projection_grace_seconds: int
    finality_deadline_seconds: int

    @classmethod
    def from_env(cls, r: EnvReader) -> MatchingSettings:
        return cls(
            match_window_seconds=r.whole_seconds("RECON_MATCH_WINDOW_SECONDS", 3600),
            notification_grace_seconds=r.whole_seconds("RECON_NOTIFICATION_GRACE_SECONDS", 900),
            projection_grace_seconds=r.whole_seconds("RECON_PROJECTION_GRACE_SECONDS", 120),
            finality_deadline_seconds=r.whole_seconds("RECON_FINALITY_DEADLINE_SECONDS", 3600),
        )


@dataclass(frozen=True, slots=True)
class AlertSettings:
    """How many new alerts one pass may open, and where alert changes are sent."""

    cap_per_pass: int
    webhook_url: str | None
    webhook_secret: Secret | None

    @classmethod
    def from_env(cls, r: EnvReader) -> AlertSettings:
        secret = r.secret("RECON_ALERT_WEBHOOK_SECRET")
        if secret is not None and not secret.reveal().startswith("whsec_"):
            raise ConfigError("RECON_ALERT_WEBHOOK_SECRET is not valid: expected a whsec_ secret")
        return cls(
            cap_per_pass=r.convert(
                "RECON_ALERT_CAP_PER_PASS", 50, positive_int, "a whole number of alerts > 0"
            ),
            webhook_url=r.url("RECON_ALERT_WEBHOOK_URL", None, ("http", "https")),
            webhook_secret=secret,
        )


@dataclass(frozen=True, slots=True)
class LogSettings:
    """Log format (JSON lines off a terminal) and level."""

    format: str
    level: str

    @classmethod
    def from_env(cls, r: EnvReader) -> LogSettings:
        return cls(
            format=r.choice("RECON_LOG_FORMAT", "auto", ("auto", "json", "console")),
            level=r.choice("RECON_LOG_LEVEL", "info", ("debug", "info", "warning", "error")),
        )
