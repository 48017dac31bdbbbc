"""Authentication of both APIs.

Gateway: ``Authorization: Bearer ak_test_...``, checked before anything else (401), then the
route's capability (403). Company API: ``X-API-Key`` + ``X-App-Id`` (401 in the envelope).
Each gateway route names its capability in its handler ``opt`` so the check sits in one hook.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from sandbox.config import SANDBOX_KEY_PREFIX
from sandbox.envelopes import CompanyError, forbidden, unauthorized
from sandbox.state import SandboxState


def bearer_key(request: Request[Any, Any, Any]) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, key = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


def authenticate_gateway(state: SandboxState, request: Request[Any, Any, Any]) -> frozenset[str]:
    """The capability set of a usable sandbox key, or a 401 with empty evidence."""
    key = bearer_key(request)
    if key is None or not key.startswith(SANDBOX_KEY_PREFIX):
        raise unauthorized()
    with state.lock:
        capabilities = state.keys.get(key)
    if capabilities is None:
        raise unauthorized()
    return capabilities


def require_capability(state: SandboxState, capabilities: frozenset[str], name: str) -> None:
    """403 with a receipt naming the refusal, as the spec's error table lists."""
    if name not in capabilities:
        raise forbidden(state.ids.new())


def gateway_guard(state: SandboxState) -> Any:
    """A ``before_request`` hook: authenticate, then check the handler's ``opt['capability']``."""

    async def hook(request: Request[Any, Any, Any]) -> None:
        capabilities = authenticate_gateway(state, request)
        needed = request.route_handler.opt.get("capability")
        if needed:
            require_capability(state, capabilities, needed)
        request.state.capabilities = capabilities

    return hook


def authenticate_company(state: SandboxState, request: Request[Any, Any, Any]) -> None:
    key = request.headers.get("x-api-key")
    app_id = request.headers.get("x-app-id")
    cfg = state.config
    if key is None or app_id is None:
        raise CompanyError(401, "Unauthorized: X-API-Key and X-App-Id headers are required.")
    if key != cfg.company_api_key or app_id.lower() != cfg.company_app_id.lower():
        raise CompanyError(
            401, "Unauthorized: invalid API key or application id (check for stray spaces)."
        )


def company_guard(state: SandboxState) -> Any:
    async def hook(request: Request[Any, Any, Any]) -> None:
        authenticate_company(state, request)

    return hook
