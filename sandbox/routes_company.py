"""Company API: webhook registration and listing, account name enquiry.

What the spec leaves open is the variant's (``sandbox/variants.py``): the success body of the
webhook operations (``{data}`` or the full ``{success, message, data, timestamp}`` envelope),
the status of a registration (200 or 201), the status of a refusal (400, 422, or 200 with
``success: false``) and which ``retryPolicy`` members are understood. Name enquiry always
answers the full envelope with 200, errors always use the envelope, wrong credentials are
always 401 (the spec shows those). Any non-empty string is a usable ``secret`` in every variant
(the spec says only "string"); ``sandbox/signing.py`` says how each form is signed with.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from litestar import Request, Response, get, post

from sandbox.envelopes import (
    company_envelope,
    company_refusal,
    company_success,
    json_response,
)
from sandbox.events import EVENT_TYPES
from sandbox.signing import SecretError, check_secret
from sandbox.state import SandboxState
from sandbox.variants import ProviderVariant
from sandbox.webhooks import ACTIVE, WEBHOOK_STATUSES

_ACCOUNT_NUMBER_RE = re.compile(r"^[0-9]{10}$")


#: The other provider's retryPolicy members (``retry_policy_fields="strict-other"``).
OTHER_POLICY_FIELDS = ("maxRetries", "retryIntervalSeconds")


def parse_retry_policy(variant: ProviderVariant, value: Any) -> dict[str, Any] | None:
    """The policy in our internal form ``{maxAttempts, initialDelaySeconds, backoffMultiplier}``.

    Ours: those three members with the decided defaults, any other member ignored. The other
    provider's: ``{maxRetries, retryIntervalSeconds}`` (a fixed interval), and any member it
    does not know is refused, which is what a strict provider does with recon's guess.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise company_refusal(variant, "retryPolicy must be an object.")
    if variant.retry_policy_fields == "strict-other":
        unknown = sorted(set(value) - set(OTHER_POLICY_FIELDS))
        if unknown:
            raise company_refusal(
                variant,
                f"retryPolicy.{unknown[0]} is not a known field; retryPolicy takes "
                f"{', '.join(OTHER_POLICY_FIELDS)}.",
            )
        retries = value.get("maxRetries", 3)
        interval = value.get("retryIntervalSeconds", 60)
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise company_refusal(variant, "retryPolicy.maxRetries must be an integer >= 0.")
        value = {"maxAttempts": retries + 1, "initialDelaySeconds": interval}
        policy: dict[str, Any] = {"backoffMultiplier": 1}
    else:
        policy = {"maxAttempts": 5, "initialDelaySeconds": 30, "backoffMultiplier": 2}
    policy.update(value)
    attempts, delay, factor = (
        policy["maxAttempts"],
        policy["initialDelaySeconds"],
        policy["backoffMultiplier"],
    )
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        raise company_refusal(variant, "retryPolicy.maxAttempts must be an integer of at least 1.")
    for name, number in (("initialDelaySeconds", delay), ("backoffMultiplier", factor)):
        if isinstance(number, bool) or not isinstance(number, int | float) or number < 0:
            raise company_refusal(variant, f"retryPolicy.{name} must be a non-negative number.")
    return policy


def parse_registration(state: SandboxState, raw: bytes) -> dict[str, Any]:
    variant = state.config.variant
    try:
        body = json.loads(raw or b"null")
    except ValueError as exc:
        raise company_refusal(variant, "The body is not valid JSON.") from exc
    if not isinstance(body, dict):
        raise company_refusal(variant, "The body must be a JSON object.")
    url = body.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise company_refusal(variant, "url is required and must be an http(s) URI.")
    event_types = body.get("eventTypes")
    if (
        not isinstance(event_types, list)
        or not event_types
        or any(t not in EVENT_TYPES for t in event_types)
    ):
        raise company_refusal(
            variant, f"eventTypes must be a non-empty list of {', '.join(EVENT_TYPES)}."
        )
    secret = body.get("secret")
    if not isinstance(secret, str) or not secret:
        raise company_refusal(variant, "secret is required (a non-empty string).")
    try:
        check_secret(state.config.signature_scheme, secret)
    except SecretError as exc:
        raise company_refusal(variant, f"secret is not usable: {exc}.") from exc
    description = body.get("description")
    if description is not None and not isinstance(description, str):
        raise company_refusal(variant, "description must be a string or null.")
    is_active = body.get("isActive", True)
    if not isinstance(is_active, bool):
        raise company_refusal(variant, "isActive must be a boolean.")
    return {
        "url": url,
        "event_types": event_types,
        "secret": secret,
        "description": description,
        "is_active": is_active,
        "retry_policy": parse_retry_policy(variant, body.get("retryPolicy")),
    }


def company_handlers(state: SandboxState) -> list[Any]:
    @post(
        "/webhooks/register",
        opt={"route_key": "POST /company/v1/webhooks/register"},
    )
    async def register(request: Request[Any, Any, Any]) -> Response[bytes]:
        fields = parse_registration(state, await request.body())
        variant = state.config.variant
        with state.lock:
            hook = state.hub.register(**fields)
            data = hook.render()
            now = state.clock.now_ms()
        body = company_success(variant, "Webhook registered", data, now)
        return json_response(body, variant.register_status)

    @get("/webhooks", opt={"route_key": "GET /company/v1/webhooks"})
    async def list_webhooks(request: Request[Any, Any, Any]) -> Response[bytes]:
        variant = state.config.variant
        status = request.query_params.get("status")
        event_type = request.query_params.get("eventType")
        if status is not None and status not in WEBHOOK_STATUSES:
            raise company_refusal(variant, f"status must be one of {', '.join(WEBHOOK_STATUSES)}.")
        if event_type is not None and event_type not in EVENT_TYPES:
            raise company_refusal(variant, f"eventType must be one of {', '.join(EVENT_TYPES)}.")
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
        return json_response(company_success(variant, "Webhooks retrieved", data, now), 200)

    @get("/accounts/name-enquiry", opt={"route_key": "GET /company/v1/accounts/name-enquiry"})
    async def name_enquiry(request: Request[Any, Any, Any]) -> Response[bytes]:
        number = request.query_params.get("accountNumber")
        if number is None or not _ACCOUNT_NUMBER_RE.match(number):
            raise company_refusal(
                state.config.variant, "accountNumber is required and must be a 10-digit number."
            )
        now = state.clock.now_ms()
        return json_response(company_envelope(True, "Name enquiry successful", None, now), 200)

    return [register, list_webhooks, name_enquiry]
