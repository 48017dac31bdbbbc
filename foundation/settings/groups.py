"""Settings groups for where things are and who may talk: store, broker, provider, web, receiver.

A group is a frozen dataclass with a `from_env` that validates its variables and nothing else,
so the store's settings can be read and tested without knowing the receiver's, and a process
that needs only one concern can be handed only that group. The groups of how often and how
long are in `timing.py`.
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
    ip_networks,
    port_number,
    positive_float,
    positive_int,
)
from foundation.settings.strength import (
    admin_token_from_env,
    provider_mode,
    webhook_secrets_from_env,
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

    @property
    def embedded(self) -> bool:
        """The store is the embedded default's SQLite file in `state_dir` (DATABASE_URL unset,
        or naming that same file), which a serving process may create and migrate itself. Any
        other store is configured, and never created by recon."""
        return self.database_url == _embedded_url(self.state_dir)

    @classmethod
    def from_env(cls, r: EnvReader) -> StoreSettings:
        state_dir = Path(r.text("RECON_STATE_DIR", DEFAULT_STATE_DIR))
        database_url = r.required_url(
            "DATABASE_URL",
            _embedded_url(state_dir),
            ("sqlite", "postgres", "postgresql", "postgresql+psycopg"),
        )
        return cls(
            database_url=normalise_database_url(database_url),
            state_dir=state_dir,
            secret_keys=_fernet_keys(r.raw("RECON_SECRET_KEY")),
        )


def _embedded_url(state_dir: Path) -> str:
    """The embedded default's store: a SQLite file in the state folder."""
    return normalise_database_url(f"sqlite:///{state_dir / 'recon.db'}")


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
    #: `live` or `sandbox` (RECON_PROVIDER_MODE, else the gateway key's prefix): how strict
    #: the credentials guarding recon must be (foundation.settings.strength).
    mode: str = "live"

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
            mode=provider_mode(r),
        )


#: Connections (and requests in progress) one web process serves at once; beyond it uvicorn
#: answers 503 at once instead of queueing without bound. The receiver's group commit keeps a
#: request short, so this is far above what a healthy provider needs and far below what
#: exhausts file descriptors or memory.
DEFAULT_MAX_CONNECTIONS: Final = 1000

#: Seconds an idle keep-alive connection is kept open: a provider re-uses its connection within
#: this when it has more to send; an idle client holding sockets is let go.
DEFAULT_KEEP_ALIVE_SECONDS: Final = 5


#: Longest a console session lasts after sign-in, however busy: a working day, so a browser
#: left signed in does not stay so overnight.
DEFAULT_CONSOLE_SESSION_SECONDS: Final = 12 * 3600

#: Longest a console session survives without a request: a screen left unlocked at lunch.
DEFAULT_CONSOLE_IDLE_SECONDS: Final = 30 * 60

#: Wrong admin tokens one client may send in a minute (console sign-in and API bearer checks
#: together) before every further try that minute is answered 429: a person mistyping is far
#: below it; a guesser is slowed to this many tries a minute.
DEFAULT_AUTH_FAILURES_PER_MINUTE: Final = 10
#: Peers whose X-Forwarded-For recon believes (RECON_TRUSTED_PROXIES): a reverse proxy on the
#: same machine, as uvicorn trusted by default before recon read the header itself. A guess is
#: counted against the peer as well as the address it forwards, so a proxy that passes a
#: client's own X-Forwarded-For through does not give each guess a fresh budget.
DEFAULT_TRUSTED_PROXIES: Final = ("127.0.0.1",)
#: HTTP parsers `recon web` can serve with. h11 by default: it bounds a request head that never
#: ends, which httptools cannot through any public option. httptools costs about half the CPU
#: per delivery, and is safe where a proxy in front bounds request heads (docs/deploy.md).
HTTP_PARSERS: Final = ("h11", "httptools")


@dataclass(frozen=True, slots=True)
class WebSettings:
    """The web process: its port, the address the provider reaches it at, the admin token, how
    many connections it holds at once, how long console sessions last and how many wrong
    admin tokens a client may send."""

    port: int
    public_url: str
    admin_token: Secret
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    keep_alive_seconds: int = DEFAULT_KEEP_ALIVE_SECONDS
    console_session_seconds: int = DEFAULT_CONSOLE_SESSION_SECONDS
    console_idle_seconds: int = DEFAULT_CONSOLE_IDLE_SECONDS
    auth_failures_per_minute: int = DEFAULT_AUTH_FAILURES_PER_MINUTE
    http_parser: str = HTTP_PARSERS[0]
    trusted_proxies: tuple[str, ...] = DEFAULT_TRUSTED_PROXIES

    @classmethod
    def from_env(cls, r: EnvReader) -> WebSettings:
        port = r.convert("PORT", 8000, port_number, "a TCP port number 1-65535")
        public_url = r.required_url("RECON_PUBLIC_URL", "http://127.0.0.1:8000", ("http", "https"))
        admin_token = admin_token_from_env(r)
        return cls(
            port=port,
            public_url=public_url,
            admin_token=admin_token,
            max_connections=r.convert(
                "RECON_WEB_MAX_CONNECTIONS",
                DEFAULT_MAX_CONNECTIONS,
                positive_int,
                "a whole number of connections > 0",
            ),
            keep_alive_seconds=r.whole_seconds(
                "RECON_WEB_KEEP_ALIVE_SECONDS", DEFAULT_KEEP_ALIVE_SECONDS
            ),
            http_parser=r.choice("RECON_WEB_HTTP_PARSER", HTTP_PARSERS[0], HTTP_PARSERS),
            console_session_seconds=r.whole_seconds(
                "RECON_CONSOLE_SESSION_SECONDS", DEFAULT_CONSOLE_SESSION_SECONDS
            ),
            console_idle_seconds=r.whole_seconds(
                "RECON_CONSOLE_IDLE_SECONDS", DEFAULT_CONSOLE_IDLE_SECONDS
            ),
            auth_failures_per_minute=r.convert(
                "RECON_AUTH_FAILURES_PER_MINUTE",
                DEFAULT_AUTH_FAILURES_PER_MINUTE,
                positive_int,
                "a whole number of wrong tokens per client per minute > 0",
            ),
            trusted_proxies=r.convert(
                "RECON_TRUSTED_PROXIES",
                DEFAULT_TRUSTED_PROXIES,
                ip_networks,
                "IP addresses or networks separated by commas (10.0.0.2, 10.1.0.0/16), or none",
            ),
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
    #: Seconds a sender has to send a whole body once its headers arrived (408 past it): a
    #: client trickling bytes must not hold a connection, and a slot of the group commit, open.
    body_timeout_seconds: float = 10.0
    #: Seconds a delivery waits for its commit before the sender hears 503 (a lock held on the
    #: inbox, a stalled disk): the provider retries, and no request waits without bound.
    commit_timeout_seconds: float = 10.0
    #: Delivery payload shapes to try, in order (RECON_PAYLOAD_SHAPES); None: the default order
    #: (a configured field map first, then every built-in shape).
    payload_shapes: tuple[str, ...] | None = None
    #: RECON_PAYLOAD_FIELD_MAP as (our field, where the provider puts it) pairs; empty: none.
    payload_field_map: tuple[tuple[str, str], ...] = ()
    #: RECON_EVENT_OUTCOMES as (event type, outcome) pairs; None: the built-in table.
    event_outcomes: tuple[tuple[str, str], ...] | None = None

    # Names upstream.webhooks.payloads accepts (foundation may not import it, so they are listed
    # here to stop start-up on a typo; tests/unit/upstream/test_payloads.py and
    # test_event_outcomes.py keep both in step).
    PAYLOAD_SHAPE_NAMES = ("recon", "standard-webhooks", "flat", "field-map")
    PAYLOAD_MAP_FIELDS = (
        "eventId",
        "eventType",
        "occurredAt",
        "transferRef",
        "receiptRef",
        "accountRef",
        "endpointRef",
        "holdingRef",
        "accountNumber",
        "amount",
        "currency",
        "status",
        "narration",
    )
    PAYLOAD_MAP_OPTIONS = (
        ("amountUnits", ("major", "minor")),
        ("timestampUnit", ("epoch-seconds", "epoch-millis")),
    )
    PAYLOAD_MAP_NEVER_CONSTANT = ("eventId", "eventType", "occurredAt")
    OUTCOMES = ("successful", "failed")

    @classmethod
    def payload_settings(
        cls, r: EnvReader
    ) -> tuple[tuple[str, ...] | None, tuple[tuple[str, str], ...]]:
        """RECON_PAYLOAD_SHAPES and RECON_PAYLOAD_FIELD_MAP, checked so a typo stops start-up
        with one line rather than quarantining every delivery later."""
        import json

        raw_map = r.raw("RECON_PAYLOAD_FIELD_MAP")
        pairs: tuple[tuple[str, str], ...] = ()
        if raw_map is not None:
            try:
                doc = json.loads(raw_map)
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                raise ConfigError(
                    "RECON_PAYLOAD_FIELD_MAP is not valid: expected a JSON object such as "
                    '{"eventType": "type", "occurredAt": "timestamp", "amount": "data.amount"}'
                )
            problems = []
            for key, value in doc.items():
                allowed = dict(cls.PAYLOAD_MAP_OPTIONS).get(key)
                if allowed is not None and value not in allowed:
                    problems.append(f"{key} must be one of {', '.join(allowed)}")
                elif allowed is None and key not in cls.PAYLOAD_MAP_FIELDS:
                    problems.append(f"{key!r} is not one of {', '.join(cls.PAYLOAD_MAP_FIELDS)}")
                elif not isinstance(value, str) or value.strip() in ("", "="):
                    problems.append(f"{key} must be a dotted path, header:<name> or =<constant>")
                elif value.strip().startswith("=") and key in cls.PAYLOAD_MAP_NEVER_CONSTANT:
                    problems.append(f"{key} cannot be a constant (=...): give where it is")
            problems += [f"{k} is required" for k in ("eventType", "occurredAt") if k not in doc]
            if problems:
                raise ConfigError(f"RECON_PAYLOAD_FIELD_MAP is not valid: {'; '.join(problems)}")
            pairs = tuple((str(k), str(v).strip()) for k, v in doc.items())
        raw_shapes = r.raw("RECON_PAYLOAD_SHAPES")
        if raw_shapes is None:
            return None, pairs
        shapes = tuple(s.strip() for s in raw_shapes.split(",") if s.strip())
        unknown = [s for s in shapes if s not in cls.PAYLOAD_SHAPE_NAMES]
        if unknown or not shapes:
            raise ConfigError(
                f"RECON_PAYLOAD_SHAPES={raw_shapes!r} is not valid: expected a comma-separated "
                f"list of {', '.join(cls.PAYLOAD_SHAPE_NAMES)}"
            )
        if "field-map" in shapes and not pairs:
            raise ConfigError(
                "RECON_PAYLOAD_SHAPES lists field-map but RECON_PAYLOAD_FIELD_MAP is not set"
            )
        return shapes, pairs

    @classmethod
    def event_outcome_settings(cls, r: EnvReader) -> tuple[tuple[str, str], ...] | None:
        """RECON_EVENT_OUTCOMES, `TYPE=outcome,...`: a typo would leave bodies without a status
        quarantined, so it stops start-up instead."""
        raw = r.raw("RECON_EVENT_OUTCOMES")
        if raw is None:
            return None
        pairs = [item.strip().partition("=") for item in raw.split(",") if item.strip()]
        table = tuple((event.strip(), outcome.strip()) for event, _, outcome in pairs)
        events = [event for event, _ in table]
        r.check(
            bool(table)
            and all(sep and 0 < len(e.strip()) <= 64 for e, sep, _ in pairs)
            and all(outcome in cls.OUTCOMES for _, outcome in table)
            and len(set(events)) == len(events),
            f"RECON_EVENT_OUTCOMES={raw!r} is not valid: expected EVENT_TYPE=outcome pairs, "
            f"comma-separated, each event type once, each outcome one of {', '.join(cls.OUTCOMES)}",
        )
        return table

    @classmethod
    def from_env(cls, r: EnvReader) -> WebhookSettings:
        path = r.text("RECON_WEBHOOK_PATH", "/webhooks/company")
        r.check(
            path.startswith("/"),
            f"RECON_WEBHOOK_PATH={path!r} is not valid: expected a path starting with /",
        )
        payload_shapes, payload_field_map = cls.payload_settings(r)
        return cls(
            path=path,
            secrets=webhook_secrets_from_env(r),
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
            body_timeout_seconds=r.seconds("RECON_WEBHOOK_BODY_TIMEOUT_SECONDS", 10.0),
            commit_timeout_seconds=r.seconds("RECON_WEBHOOK_COMMIT_TIMEOUT_SECONDS", 10.0),
            payload_shapes=payload_shapes,
            payload_field_map=payload_field_map,
            event_outcomes=cls.event_outcome_settings(r),
        )
