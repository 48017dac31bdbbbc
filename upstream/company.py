"""The company API client (`{base}/company/v1`): webhooks and account name enquiry.

Authenticated with `X-API-Key` and `X-App-Id`; both are treated as secrets (kept out of logs,
messages and reprs). Webhook registration carries no Idempotency-Key, so it is retried only when
the request provably never arrived (connect failure) or was refused unprocessed (429).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from upstream.errors import InvalidInput
from upstream.pooled_client import PooledClient, optional_throttle
from upstream.retry import RetryPolicy
from upstream.transport import (
    DEFAULT_LIMITS,
    DEFAULT_TIMEOUT,
    Call,
    ErrorDetails,
    HttpCore,
    join_base,
)
from upstream.wire.company_types import (
    EVENT_TYPES,
    WEBHOOK_STATUSES,
    NameEnquiry,
    Webhook,
    WebhookList,
    WebhookRequest,
    parse_name_enquiry,
    parse_webhook,
    parse_webhook_list,
)
from upstream.wire.reader import Fields

T = TypeVar("T")

TEST_ACCOUNT_NUMBER = "0123456789"


def read_company_envelope(data: object) -> ErrorDetails:
    """Read `{success, message, data, timestamp}` into error details."""
    if not isinstance(data, dict):
        return ErrorDetails()
    message = data.get("message")
    return ErrorDetails(message=message if isinstance(message, str) else None)


class CompanyClient(PooledClient):
    """Typed, resilient client for the company API. Thread-safe; close() when done."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        app_id: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        limits: httpx.Limits = DEFAULT_LIMITS,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        requests_per_second: float | None = None,
    ) -> None:
        self._core = HttpCore(
            api="the company API",
            base_url=join_base(base_url, "/company/v1"),
            auth_headers={"X-API-Key": api_key, "X-App-Id": app_id},
            secrets={"company API key": api_key, "company app id": app_id},
            read_envelope=read_company_envelope,
            credential_hint="company API key and app id",
            transport=transport,
            timeout=timeout,
            limits=limits,
            policy=retry or RetryPolicy(),
            sleep=sleep,
            rng=rng or random.Random(),
            throttle=optional_throttle(requests_per_second),
        )

    def _send(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        safe: bool,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        require_success: bool = True,
    ) -> tuple[int, Fields]:
        call = Call(
            operation=operation, method=method, path=path, params=params, body=body, safe=safe
        )
        reply = self._core.send(call)
        top = Fields(reply.data, "response")
        if require_success and top.opt_flag("success") is False:
            message = self._core.scrub(top.opt_text("message")) or "no reason given"
            raise InvalidInput(
                f"{operation}: the company API answered {reply.status} but reported failure: "
                f"{message}.",
            )
        return reply.status, top

    def register_webhook(self, request: WebhookRequest) -> Webhook:
        """POST /webhooks/register. Not idempotent upstream: never blindly repeated."""
        unknown = [e for e in request.event_types if e not in EVENT_TYPES]
        if unknown:
            raise ValueError(f"unknown event types {unknown}; known: {', '.join(EVENT_TYPES)}")
        _, top = self._send(
            "webhook.register", "POST", "/webhooks/register", safe=False, body=request.to_wire()
        )
        return parse_webhook(top.obj("data"))

    def list_webhooks(
        self, *, status: str | None = None, event_type: str | None = None
    ) -> WebhookList:
        """GET /webhooks, optionally filtered by status and event type."""
        if status is not None and status not in WEBHOOK_STATUSES:
            raise ValueError(f"status must be one of {', '.join(WEBHOOK_STATUSES)}")
        if event_type is not None and event_type not in EVENT_TYPES:
            raise ValueError(f"event_type must be one of {', '.join(EVENT_TYPES)}")
        params: dict[str, str] = {}
        if status is not None:
            params["status"] = status
        if event_type is not None:
            params["eventType"] = event_type
        _, top = self._send("webhook.list", "GET", "/webhooks", safe=True, params=params)
        return parse_webhook_list(top.obj("data"))

    def name_enquiry(self, account_number: str = TEST_ACCOUNT_NUMBER) -> NameEnquiry:
        """GET /accounts/name-enquiry: resolves an account; also proves the credentials work."""
        _, top = self._send(
            "account.name_enquiry",
            "GET",
            "/accounts/name-enquiry",
            safe=True,
            params={"accountNumber": account_number},
            require_success=False,
        )
        return parse_name_enquiry(top)
