"""Company API: webhook registration and listing, account name enquiry.

Every answer is the ``{success, message, data, timestamp}`` envelope (docs/decisions.md):
register 201, list and name enquiry 200, validation 400, credentials 401.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from litestar import Request, Response, get, post

from sandbox.envelopes import CompanyError, company_envelope, json_response
from sandbox.events import EVENT_TYPES
from sandbox.signing import SecretError, check_secret
from sandbox.state import SandboxState
from sandbox.webhooks import ACTIVE, WEBHOOK_STATUSES

_ACCOUNT_NUMBER_RE = re.compile(r"^[0-9]{10}$")


def parse_retry_policy(value: Any) -> dict[str, Any] | None:
    """``{maxAttempts, initialDelaySeconds, backoffMultiplier}`` with the decided defaults."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CompanyError(400, "retryPolicy must be an object.")
    policy = {"maxAttempts": 5, "initialDelaySeconds": 30, "backoffMultiplier": 2}
    policy.update(value)
    attempts, delay, factor = (
        policy["maxAttempts"],
        policy["initialDelaySeconds"],
        policy["backoffMultiplier"],
    )
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        raise CompanyError(400, "retryPolicy.maxAttempts must be an integer of at least 1.")
    for name, number in (("initialDelaySeconds", delay), ("backoffMultiplier", factor)):
        if isinstance(number, bool) or not isinstance(number, int | float) or number < 0:
            raise CompanyError(400, f"retryPolicy.{name} must be a non-negative number.")
    return policy


def parse_registration(state: SandboxState, raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"null")
    except ValueError as exc:
        raise CompanyError(400, "The body is not valid JSON.") from exc
    if not isinstance(body, dict):
        raise CompanyError(400, "The body must be a JSON object.")
    url = body.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise CompanyError(400, "url is required and must be an http(s) URI.")
    event_types = body.get("eventTypes")
    if (
        not isinstance(event_types, list)
        or not event_types
        or any(t not in EVENT_TYPES for t in event_types)
    ):
        raise CompanyError(400, f"eventTypes must be a non-empty list of {', '.join(EVENT_TYPES)}.")
    secret = body.get("secret")
    if not isinstance(secret, str) or not secret:
        raise CompanyError(400, "secret is required.")
    try:
        check_secret(state.config.signature_scheme, secret)
    except SecretError as exc:
        raise CompanyError(400, f"secret is not usable: {exc}.") from exc
    description = body.get("description")
    if description is not None and not isinstance(description, str):
        raise CompanyError(400, "description must be a string or null.")
    is_active = body.get("isActive", True)
    if not isinstance(is_active, bool):
        raise CompanyError(400, "isActive must be a boolean.")
    return {
        "url": url,
        "event_types": event_types,
        "secret": secret,
        "description": description,
        "is_active": is_active,
        "retry_policy": parse_retry_policy(body.get("retryPolicy")),
    }


def company_handlers(state: SandboxState) -> list[Any]:
    @post(
        "/webhooks/register",
        opt={"route_key": "POST /company/v1/webhooks/register"},
    )
    async def register(request: Request[Any, Any, Any]) -> Response[bytes]:
        fields = parse_registration(state, await request.body())
        with state.lock:
            hook = state.hub.register(**fields)
            data = hook.render()
            now = state.clock.now_ms()
        return json_response(company_envelope(True, "Webhook registered", data, now), 201)

    @get("/webhooks", opt={"route_key": "GET /company/v1/webhooks"})
    async def list_webhooks(request: Request[Any, Any, Any]) -> Response[bytes]:
        status = request.query_params.get("status")
        event_type = request.query_params.get("eventType")
        if status is not None and status not in WEBHOOK_STATUSES:
            raise CompanyError(400, f"status must be one of {', '.join(WEBHOOK_STATUSES)}.")
        if event_type is not None and event_type not in EVENT_TYPES:
            raise CompanyError(400, f"eventType must be one of {', '.join(EVENT_TYPES)}.")
        with state.lock:
            hooks = [
                h
                for h in state.hub.webhooks.values()
                if (status is None or h.status == status)
                and (event_type is None or event_type in h.event_types)
            ]
            active = sum(1 for h in hooks if h.status == ACTIVE)
            data = {
                "webhooks": [h.render() for h in hooks],
                "totalCount": len(hooks),
                "activeCount": active,
                "inactiveCount": len(hooks) - active,
            }
            now = state.clock.now_ms()
        return json_response(company_envelope(True, "Webhooks retrieved", data, now), 200)

    @get("/accounts/name-enquiry", opt={"route_key": "GET /company/v1/accounts/name-enquiry"})
    async def name_enquiry(request: Request[Any, Any, Any]) -> Response[bytes]:
        number = request.query_params.get("accountNumber")
        if number is None or not _ACCOUNT_NUMBER_RE.match(number):
            raise CompanyError(400, "accountNumber is required and must be a 10-digit number.")
        now = state.clock.now_ms()
        return json_response(company_envelope(True, "Name enquiry successful", None, now), 200)

    return [register, list_webhooks, name_enquiry]
