"""Reading answers: Retry-After in both forms and its cap, statuses the specs never name, error
bodies of every common shape, and the size cap, against a scripted in-process transport.

The waits here are the ones the retry policy asks `sleep` for (recorded, not slept); the real
waits over HTTP are measured in tests/integration/upstream/test_company_variants.py.
"""

from __future__ import annotations

import random
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from tests.unit.upstream.fakes import KEY, Script, environment_value, ok, problem
from upstream import (
    CompanyClient,
    GatewayClient,
    InvalidInput,
    NotFound,
    RetryPolicy,
    Unavailable,
    WebhookRequest,
)
from upstream.errors import ProviderError, ResponseTooLarge
from upstream.responses import retry_after_seconds
from upstream.retry import MAX_RETRY_AFTER_SECONDS

APP_ID = "6f1c2a34-0000-4000-8000-00000000c0de"
HOOK = {
    "webhookId": "wh_1",
    "url": "https://recon.test/hook",
    "eventTypes": ["PAYMENT_RECEIVED"],
    "status": "active",
    "createdAt": "2026-11-22T00:48:01.123Z",
}
#: A long deadline, so the waits asked for are limited by the cap alone.
PATIENT = RetryPolicy(max_attempts=3, deadline=10_000.0)


def gateway(script: Script, policy: RetryPolicy = PATIENT) -> tuple[GatewayClient, list[float]]:
    sleeps: list[float] = []
    client = GatewayClient(
        "http://gw.test",
        KEY,
        transport=script.transport,
        retry=policy,
        sleep=sleeps.append,
        rng=random.Random(3),
    )
    return client, sleeps


def company(script: Script, **extra: Any) -> tuple[CompanyClient, list[float]]:
    sleeps: list[float] = []
    client = CompanyClient(
        "http://co.test",
        "ck_test_x",
        APP_ID,
        transport=script.transport,
        retry=PATIENT,
        sleep=sleeps.append,
        **extra,
    )
    return client, sleeps


def unavailable(headers: dict[str, str]) -> httpx.Response:
    return problem(503, "Unavailable", "unavailable-ServiceUnavailable", "down", headers)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("120", 120.0), (" 3 ", 3.0), ("1.5", 1.5), ("0", 0.0), (None, None), ("soon", None)],
)
def test_retry_after_delta_seconds(value: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(value) == seconds


def test_retry_after_dates_are_measured_from_the_answer_s_own_date() -> None:
    sent = 1_900_000_000
    when, date = formatdate(sent + 42, usegmt=True), formatdate(sent, usegmt=True)
    assert retry_after_seconds(when, sent_at=date) == 42.0
    # Without a Date header, from our clock; a date already past means "now".
    assert retry_after_seconds(when, now=sent + 40) == 2.0
    assert retry_after_seconds(formatdate(sent - 5, usegmt=True), now=sent) == 0.0
    assert retry_after_seconds(when, sent_at="not a date", now=sent) == 42.0


def test_a_503_with_retry_after_waits_that_long_instead_of_the_backoff() -> None:
    client, sleeps = gateway(Script(unavailable({"Retry-After": "7"}), ok(environment_value())))
    client.environment()
    assert sleeps == [7.0]


def test_a_503_with_an_http_date_waits_until_then() -> None:
    sent = 1_900_000_000
    headers = {
        "Retry-After": formatdate(sent + 4, usegmt=True),
        "Date": formatdate(sent, usegmt=True),
    }
    client, sleeps = gateway(Script(unavailable(headers), ok(environment_value())))
    client.environment()
    assert sleeps == [4.0]


def test_retry_after_is_capped_but_the_error_keeps_the_provider_s_figure() -> None:
    script = Script(unavailable({"Retry-After": "86400"}))
    client, sleeps = gateway(script)
    with pytest.raises(Unavailable) as caught:
        client.environment()
    assert sleeps == [MAX_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS]
    assert caught.value.retry_after == 86400.0 and len(script.requests) == 3
    # A policy may cap lower still.
    client, sleeps = gateway(
        Script(unavailable({"Retry-After": "30"}), ok(environment_value())),
        RetryPolicy(max_retry_after=0.25),
    )
    client.environment()
    assert sleeps == [0.25]


def test_a_503_without_retry_after_backs_off_as_before() -> None:
    client, sleeps = gateway(Script(unavailable({}), ok(environment_value())))
    client.environment()
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= PATIENT.base_delay


def test_retry_after_never_makes_an_unprotected_write_repeat() -> None:
    script = Script(httpx.Response(503, headers={"Retry-After": "1"}, json={"message": "down"}))
    client, sleeps = company(script)
    request = WebhookRequest(url="https://r.test/h", event_types=["KYC_VERIFIED"], secret="s")
    with pytest.raises(Unavailable) as caught:
        client.register_webhook(request)
    assert len(script.requests) == 1 and sleeps == []
    assert caught.value.retry_after == 1.0


@pytest.mark.parametrize(
    ("status", "kind"),
    [(422, InvalidInput), (405, InvalidInput), (413, InvalidInput), (410, NotFound)],
)
def test_statuses_no_spec_names_get_their_family_s_class(
    status: int, kind: type[ProviderError]
) -> None:
    script = Script(httpx.Response(status, json={"message": "nope"}))
    client, sleeps = company(script)
    with pytest.raises(kind) as caught:
        client.list_webhooks()
    assert caught.value.http_status == status and "nope" in str(caught.value)
    assert sleeps == []


def test_a_408_is_retried_even_for_an_unprotected_write() -> None:
    created = httpx.Response(200, json={"data": HOOK})
    script = Script(httpx.Response(408, content=b""), created)
    client, _ = company(script)
    request = WebhookRequest(url="https://r.test/h", event_types=["KYC_VERIFIED"], secret="s")
    assert client.register_webhook(request).status == "ACTIVE"
    assert len(script.requests) == 2


@pytest.mark.parametrize(
    "body",
    [
        {"success": False, "message": "url is invalid", "data": None, "timestamp": "x"},
        {"error": "url is invalid"},
        {"error": {"code": "E42", "message": "url is invalid"}},
        {"errors": [{"field": "url", "message": "url is invalid"}]},
        {"errors": ["url is invalid"]},
        {"type": "about:blank", "title": "Bad Request", "detail": "url is invalid"},
        {"status": 400, "problem": {"kind": "InvalidInput", "message": "url is invalid"}},
    ],
)
def test_error_bodies_of_every_common_shape_say_why(body: dict[str, Any]) -> None:
    client, _ = company(Script(httpx.Response(400, json=body)))
    with pytest.raises(InvalidInput) as caught:
        client.list_webhooks()
    assert caught.value.info.provider_message == "url is invalid"
    assert "url is invalid" in str(caught.value)


def test_a_200_that_says_success_false_is_a_refusal_with_its_call() -> None:
    refused = {"success": False, "message": "url is invalid", "data": None}
    client, _ = company(Script(httpx.Response(200, json=refused)))
    with pytest.raises(InvalidInput) as caught:
        client.list_webhooks()
    info = caught.value.info
    assert (info.http_status, info.method, info.path) == (200, "GET", "/company/v1/webhooks")
    assert "url is invalid" in str(caught.value)


def test_a_secret_echoed_in_a_refusal_is_masked() -> None:
    secret = "my-plain-webhook-secret"
    echo = {"message": f"secret {secret} is too weak", "success": False}
    client, _ = company(Script(httpx.Response(422, json=echo)))
    request = WebhookRequest(url="https://r.test/h", event_types=["KYC_VERIFIED"], secret=secret)
    with pytest.raises(InvalidInput) as caught:
        client.register_webhook(request)
    assert secret not in str(caught.value) and secret not in repr(caught.value.info)
    assert "too weak" in str(caught.value)


@pytest.mark.parametrize("declared", [True, False])
def test_an_oversized_body_is_refused_and_not_retried(declared: bool) -> None:
    big = b'{"data": "' + b"x" * 5000 + b'"}'
    chunks = [big[i : i + 512] for i in range(0, len(big), 512)]
    answer = httpx.Response(200, content=big if declared else iter(chunks))
    script = Script(answer)
    client, sleeps = company(script, max_response_bytes=4096)
    with pytest.raises(ResponseTooLarge) as caught:
        client.list_webhooks()
    assert caught.value.limit_bytes == 4096 and "4,096-byte limit" in str(caught.value)
    assert len(script.requests) == 1 and sleeps == []


def test_a_body_at_the_limit_is_read() -> None:
    body = b'{"data": {"webhooks": []}}'
    client, _ = company(Script(httpx.Response(200, content=body)), max_response_bytes=len(body))
    assert client.list_webhooks().webhooks == ()
