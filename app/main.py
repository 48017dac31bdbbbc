"""The web process: `create_app(settings, enqueue=...)` builds the whole Litestar app.

What it wires, and why here: the store's engine, the signing keys (stored secrets plus
RECON_WEBHOOK_SECRETS), the group-commit writer and the enqueue relay (started and stopped with
the app's lifespan), the raw ASGI receiver route, the idiomatic Litestar routes
(inbox, health, metrics, OpenAPI at /schema), the reports and alerts routes of
`app.reporting_routes` behind the admin guard, and background self-registration. The receiver's
path is dispatched before Litestar's request path (app.receiver_first).

`enqueue(row_ids)` comes from the process wiring (`recon web` passes the workers' dispatcher), so
the app itself imports nothing of Dramatiq.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Final

import structlog
from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.exceptions import HTTPException
from litestar.handlers import ASGIRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, YamlRenderPlugin
from litestar.types import Scope
from sqlalchemy.exc import OperationalError

from app import health, reporting_routes, state_keys, transfers_api
from app.auth import ADMIN_TOKEN_STATE_KEY, AUTH_LIMITER_STATE_KEY, admin_guard
from app.auth_limits import AuthFailureLimiter
from app.console import TEMPLATE_CONFIG, console_router
from app.console.session import RULES_STATE_KEY
from app.correlation import correlation_middleware
from app.deliveries_api import DeliveriesController
from app.malformed_bodies import EXCEPTION_HANDLERS as MALFORMED_BODY_HANDLERS
from app.receiver.enqueue_relay import EnqueueRelay
from app.receiver.group_commit import GroupCommitWriter
from app.receiver.route import WebhookReceiver
from app.receiver_first import ReceiverFirstLitestar
from app.reporting_routes import POLICY_STATE_KEY
from app.signing_keys import SigningKeys, require_decryptable_secrets
from app.startup_registration import StartupRegistration
from app.store_outage import store_unavailable
from foundation import SecretBox, Settings
from reconciliation import ReconcilePolicy
from reconciliation.notifications import (
    RegistrationResult,
    company_client,
    ensure_registered,
    process_owner,
)
from reconciliation.operator import SessionRules
from reconciliation.postings import ReadBudget
from reconciliation.store import make_engine, make_session_factory
from upstream import CompanyClient, reader_for

#: `app.state` key of the StartupRegistration (tests wait on it).
REGISTRATION_STATE_KEY: Final = "registration"
#: `app.state` key of the SigningKeys.
SIGNING_KEYS_STATE_KEY: Final = state_keys.SIGNING_KEYS

log = structlog.get_logger(__name__)


def create_app(
    settings: Settings,
    *,
    enqueue: Callable[[Sequence[int]], None] | None,
    self_register: bool = True,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    company_client_factory: Callable[[], CompanyClient] | None = None,
) -> Litestar:
    """The web app for `settings`; `enqueue` receives inbox row ids after their commit.

    `enqueue=None` says no broker consumer is reachable from this process (the embedded
    default): committed deliveries stay pending for the workers' sweeper, and no relay thread
    runs.

    `self_register=False` skips start-up registration (tests, or a deploy that registers with
    `recon webhooks register` as a release step). `clock` is the signature clock (Unix seconds);
    `monotonic` paces the signing keys' forced reloads.
    Raises ConfigError when RECON_WEBHOOK_SECRETS does not fit RECON_SIGNATURE_SCHEME.
    """
    engine = make_engine(settings.store.database_url)
    factory = make_session_factory(engine)
    keys = SigningKeys(
        session_factory=factory,
        box=SecretBox(settings.store.secret_keys),
        configured=settings.webhooks.secrets,
        scheme=settings.webhooks.signature_scheme,
        header=settings.webhooks.signature_header,
        tolerance_seconds=settings.webhooks.signature_tolerance_seconds,
        monotonic=monotonic,
    )
    # A key that cannot read the stored secret would mean silent 401s: stop here instead.
    require_decryptable_secrets(keys)
    relay = EnqueueRelay(enqueue) if enqueue is not None else None
    writer = GroupCommitWriter(
        engine,
        on_committed=relay.submit if relay else None,
        commit_timeout=settings.webhooks.commit_timeout_seconds,
    )
    receiver = WebhookReceiver(
        keys=keys,
        writer=writer,
        scheme=settings.webhooks.signature_scheme,
        signature_header=settings.webhooks.signature_header,
        body_limit_bytes=settings.webhooks.body_limit_bytes,
        body_timeout_seconds=settings.webhooks.body_timeout_seconds,
        clock=clock,
    )
    make_client = company_client_factory or (lambda: company_client(settings))
    owner = process_owner()

    def register() -> RegistrationResult:
        with make_client() as client:
            return ensure_registered(settings, factory, client, owner=owner)

    def registered(_: RegistrationResult) -> None:
        keys.refresh()

    registration = StartupRegistration(register, registered)
    limiter = AuthFailureLimiter(settings.web.auth_failures_per_minute, settings.broker.redis_url)

    async def start() -> None:
        await asyncio.to_thread(keys.refresh)
        keys.start()
        if relay is not None:
            relay.start()
        await writer.start()
        if self_register:
            registration.start()

    async def stop() -> None:
        registration.stop()
        await writer.stop()
        if relay is not None:
            relay.stop()
        keys.stop()
        await limiter.close()
        engine.dispose()

    receiver_route = ASGIRouteHandler(
        settings.webhooks.path, copy_scope=False, name="webhook-receiver"
    )(receiver.serve)
    return ReceiverFirstLitestar(
        receiver_path=settings.webhooks.path,
        receiver=receiver.serve,
        route_handlers=[
            receiver_route,
            *health.ROUTE_HANDLERS,
            DeliveriesController,
            console_router(settings),
            Router(
                path="/", route_handlers=list(reporting_routes.ROUTE_HANDLERS), guards=[admin_guard]
            ),
            transfers_api.routes(settings),
        ],
        middleware=[correlation_middleware(bypass=frozenset({settings.webhooks.path}))],
        on_startup=[start],
        on_shutdown=[stop],
        after_exception=[_log_exception],
        exception_handlers={OperationalError: store_unavailable, **MALFORMED_BODY_HANDLERS},
        state=State(
            {
                state_keys.SESSION_FACTORY: factory,
                state_keys.ENGINE: engine,
                state_keys.COMMIT_BOUND_SECONDS: min(
                    health.WRITE_PROBE_SECONDS, settings.webhooks.commit_timeout_seconds
                ),
                state_keys.ENQUEUE: relay.submit if relay else _leave_pending,
                state_keys.BROKER_URL: settings.broker.redis_url,
                state_keys.PAYLOAD_READER: reader_for(settings.webhooks),
                state_keys.READ_BUDGET: ReadBudget(
                    settings.provider.gateway_requests_per_second,
                    settings.schedules.max_staleness_seconds,
                ),
                ADMIN_TOKEN_STATE_KEY: settings.web.admin_token,
                AUTH_LIMITER_STATE_KEY: limiter,
                RULES_STATE_KEY: SessionRules(
                    absolute_seconds=settings.web.console_session_seconds,
                    idle_seconds=settings.web.console_idle_seconds,
                ),
                REGISTRATION_STATE_KEY: registration,
                SIGNING_KEYS_STATE_KEY: keys,
                # The reports API reads grace periods from the same settings as the workers.
                POLICY_STATE_KEY: ReconcilePolicy.from_settings(settings),
            }
        ),
        # The schema as JSON (at /schema and /schema/openapi.json) and YAML only: every HTML
        # renderer Litestar ships loads its scripts from a CDN, which fails offline and in
        # locked-down networks and would run third-party code on the admin's origin.
        openapi_config=OpenAPIConfig(
            title="recon",
            version="0.1.0",
            path="/schema",
            render_plugins=[JsonRenderPlugin(), YamlRenderPlugin()],
        ),
        template_config=TEMPLATE_CONFIG,
        # Logging is structlog's (foundation.logs); Litestar must not reconfigure it.
        logging_config=None,
    )


def _leave_pending(row_ids: Sequence[int]) -> None:
    """No broker consumer from this process: pending rows wait for the workers' sweeper."""


def _log_exception(exc: Exception, scope: Scope) -> None:
    """Unexpected errors, logged once with the request path (never headers or body).

    Refusals Litestar raises on purpose (401, 404, 400) are answers, not errors.
    """
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        return
    if isinstance(exc, tuple(MALFORMED_BODY_HANDLERS)):
        return
    log.error("web.unhandled_error", error=type(exc).__name__, path=scope.get("path"), exc_info=exc)
