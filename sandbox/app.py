"""The sandbox Litestar app: gateway ``/v1``, company API ``/company/v1``, control ``/_sandbox``.

Request path, in order: route match -> route faults (middleware) -> authentication and
capability (``before_request``) -> handler. Unmatched ``/v1`` paths still authenticate first,
so a bad key always sees 401 before anything else.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import Litestar, Request, Response, Router
from litestar.exceptions import HTTPException

from sandbox.auth import authenticate_company, authenticate_gateway, company_guard, gateway_guard
from sandbox.config import SandboxConfig
from sandbox.control import control_router
from sandbox.envelopes import (
    CompanyError,
    GatewayError,
    company_envelope,
    json_response,
    not_found,
)
from sandbox.faults import fault_middleware
from sandbox.routes_company import company_handlers
from sandbox.routes_gateway_accounts import account_handlers
from sandbox.routes_gateway_balances import balance_handlers
from sandbox.routes_gateway_endpoints import endpoint_handlers
from sandbox.routes_gateway_transfers import transfer_handlers
from sandbox.state import SandboxState
from sandbox.units import write_asset_under

_log = logging.getLogger("sandbox.app")


def create_app(config: SandboxConfig | None = None, state: SandboxState | None = None) -> Litestar:
    """Build the app around ``state`` (a fresh one from ``config`` when not given)."""
    if state is None:
        state = SandboxState(config)
    elif config is not None and config is not state.config:
        raise ValueError("pass either a config or a state built from it, not two different ones")
    write_asset_under(state.config.variant.unit_asset_member)

    gateway = Router(
        path="/v1",
        route_handlers=[
            *transfer_handlers(state),
            *endpoint_handlers(state),
            *balance_handlers(state),
            *account_handlers(state),
        ],
        before_request=gateway_guard(state),
    )
    company = Router(
        path="/company/v1",
        route_handlers=company_handlers(state),
        before_request=company_guard(state),
    )

    def on_gateway_error(_: Request[Any, Any, Any], exc: GatewayError) -> Response[bytes]:
        return json_response(exc.to_wire(), exc.status, exc.headers)

    def on_company_error(_: Request[Any, Any, Any], exc: CompanyError) -> Response[bytes]:
        body = company_envelope(False, exc.message, None, state.clock.now_ms())
        return json_response(body, exc.status, exc.headers)

    def on_http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
        """Framework errors (unknown path, wrong method) in each API's own envelope."""
        path = request.url.path
        try:
            if path.startswith("/v1"):
                authenticate_gateway(state, request)
                problem = not_found(f"No operation {request.method} {path}.")
                if exc.status_code != 404:
                    problem = GatewayError(
                        exc.status_code, "InvalidInput", "invalid-Input", str(exc.detail)
                    )
                return on_gateway_error(request, problem)
            if path.startswith("/company/v1"):
                authenticate_company(state, request)
                return on_company_error(request, CompanyError(exc.status_code, str(exc.detail)))
        except GatewayError as auth:
            return on_gateway_error(request, auth)
        except CompanyError as auth:
            return on_company_error(request, auth)
        return json_response({"error": str(exc.detail)}, exc.status_code)

    def on_startup() -> None:
        if state.config.run_background:
            state.start_background()

    def on_shutdown() -> None:
        state.stop_background()

    app = Litestar(
        route_handlers=[gateway, company, control_router(state)],
        middleware=[fault_middleware(state.faults, state.clock, state.config.variant)],
        exception_handlers={
            GatewayError: on_gateway_error,
            CompanyError: on_company_error,
            HTTPException: on_http_error,
        },
        on_startup=[on_startup],
        on_shutdown=[on_shutdown],
        openapi_config=None,
        # In-process use must not reconfigure the host process's logging.
        logging_config=None,
    )
    app.state.sandbox = state
    return app
