"""The company API client (`{base}/company/v1`): webhooks and account name enquiry.

Authenticated with `X-API-Key` and `X-App-Id`; both are treated as secrets (kept out of logs,
messages and reprs). Webhook registration carries no Idempotency-Key, so it is retried only when
the request provably never arrived (connect failure) or was refused unprocessed (429).

The spec shows the success body of the webhook operations as `{data}` and the error envelope as
`{success, message, data, timestamp}`, and leaves status codes open, so the client reads either
body on any 2xx (the payload is always `data`), treats a 2xx that says `success: false` as the
refusal it is, and reads an error's words from whichever of the usual members carries them.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import httpx
import msgspec
import structlog

from upstream.errors import CallInfo, InvalidInput, ProviderError
from upstream.pooled_client import PooledClient, optional_throttle
from upstream.retry import RetryPolicy
from upstream.transport import (
    DEFAULT_LIMITS,
    DEFAULT_TIMEOUT,
    MAX_RESPONSE_BYTES,
    Call,
    ErrorDetails,
    HttpCore,
    join_base,
)
from upstream.wire.company_types import (
    EVENT_TYPES,
    WEBHOOK_STATUSES,
    NameEnquiry,
    Success,
    SuccessFlag,
    Webhook,
    WebhookList,
    WebhookRequest,
)
from upstream.wire.decoding import decode

log = structlog.get_logger(__name__)

#: The 10-digit test number the spec says name enquiry accepts.
TEST_ACCOUNT_NUMBER: Final = "0123456789"
#: Longest provider message kept in an error: enough for any validation sentence, short enough
#: that a provider echoing a whole page (or a request body) does not flood logs and alerts.
MESSAGE_LIMIT: Final = 300
#: API path prefix, for naming the failed call in an error built after a 2xx.
PREFIX: Final = "/company/v1"


def read_company_envelope(data: object) -> ErrorDetails:
    """The words and code of a company API error body, whatever member carries them.

    The spec's envelope puts them in `message`; providers and the proxies in front of them also
    answer `{error: text}`, `{error: {message, code}}`, `{errors: [...]}`, RFC 9457's
    `{title, detail}` or the gateway's `{problem: {...}}`. Whichever is present becomes the one
    `ErrorDetails`, so every refusal reaches the caller as a typed error that says why.
    """
    if not isinstance(data, dict):
        return ErrorDetails()
    nested = data.get("error") if isinstance(data.get("error"), dict) else data.get("problem")
    inner = nested if isinstance(nested, dict) else {}
    message = _first_text(
        data.get("message"),
        data.get("error"),
        inner.get("message"),
        data.get("detail"),
        _first_error(data.get("errors")),
        data.get("title"),
    )
    code = _first_text(data.get("code"), inner.get("code"), data.get("errorCode"))
    return ErrorDetails(kind=_first_text(inner.get("kind")), code=code, message=message)


def without_secret(error: ProviderError, secret: str) -> ProviderError:
    """`error` with every occurrence of `secret` in its message and provider words masked."""
    if not secret or (secret not in error.message and secret not in str(error.info)):
        return error
    error.message = error.message.replace(secret, "***")
    error.args = (error.message,)
    said = error.info.provider_message
    if said is not None:
        error.info = dataclasses.replace(error.info, provider_message=said.replace(secret, "***"))
    return error


def _first_text(*values: object) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip():
            text = value.strip()
            return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."
    return None


def _first_error(errors: object) -> object:
    if isinstance(errors, list) and errors:
        first = errors[0]
        return first.get("message") if isinstance(first, dict) else first
    return None


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
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self._core = HttpCore(
            api="the company API",
            base_url=join_base(base_url, PREFIX),
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
            max_response_bytes=max_response_bytes,
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
    ) -> object:
        call = Call(
            operation=operation, method=method, path=path, params=params, body=body, safe=safe
        )
        reply = self._core.send(call)
        if require_success and decode(reply.data, SuccessFlag, "response").success is False:
            # A provider that answers refusals with 200 and `success: false`: still a refusal.
            details = read_company_envelope(reply.data)
            said = self._core.scrub(details.message)
            raise InvalidInput(
                f"{operation} was refused: the company API answered {reply.status} with "
                f"success false ({said or 'no reason given'}). Correct the request; repeating "
                "it unchanged will not help.",
                CallInfo(
                    operation=operation,
                    method=method,
                    path=PREFIX + path,
                    http_status=reply.status,
                    code=details.code,
                    provider_message=said,
                ),
            )
        return reply.data

    def register_webhook(self, request: WebhookRequest) -> Webhook:
        """POST /webhooks/register. Not idempotent upstream: never blindly repeated.

        The spec does not show `retryPolicy`'s fields. If the provider refuses ours (a 4xx or
        `success: false` whose words name the retry policy), nothing was registered, so the
        registration is sent once more without a policy and the provider's own schedule applies:
        a webhook with a default schedule beats no webhook.
        """
        unknown = [e for e in request.event_types if e not in EVENT_TYPES]
        if unknown:
            raise ValueError(f"unknown event types {unknown}; known: {', '.join(EVENT_TYPES)}")
        try:
            top = self._register(request)
        except InvalidInput as refused:
            words = (refused.info.provider_message or "").lower()
            if request.retry_policy is None or "retry" not in words:
                raise
            log.warning(
                "company.retry_policy_refused",
                reason=refused.info.provider_message,
                hint="registering without retryPolicy: the provider's own retry schedule applies",
            )
            top = self._register(msgspec.structs.replace(request, retry_policy=None))
        return decode(top, Success[Webhook], "response").data

    def _register(self, request: WebhookRequest) -> object:
        """One registration request; the webhook secret is cut from any error it causes.

        A provider may echo the request (secret included) in its refusal; the secret is not
        one of the client's credentials, so `HttpCore` cannot know to scrub it.
        """
        try:
            top = self._send(
                "webhook.register", "POST", "/webhooks/register", safe=False, body=request.to_wire()
            )
        except ProviderError as error:
            raise without_secret(error, request.secret) from None
        return top

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
        top = self._send("webhook.list", "GET", "/webhooks", safe=True, params=params)
        return decode(top, Success[WebhookList], "response").data

    def name_enquiry(self, account_number: str = TEST_ACCOUNT_NUMBER) -> NameEnquiry:
        """GET /accounts/name-enquiry: resolves an account; also proves the credentials work."""
        top = self._send(
            "account.name_enquiry",
            "GET",
            "/accounts/name-enquiry",
            safe=True,
            params={"accountNumber": account_number},
            require_success=False,
        )
        return decode(top, NameEnquiry, "response")
