"""Retries, deadlines, fail-fast refusals and secrecy, against a scripted in-process transport."""

from __future__ import annotations

import random
import uuid

import httpx
import pytest
from structlog.testing import capture_logs

from tests.unit.upstream.fakes import (
    KEY,
    REF,
    Script,
    environment_value,
    garbled,
    ok,
    problem,
    transfer_value,
)
from upstream import (
    CompanyClient,
    Destination,
    Forbidden,
    GatewayClient,
    HoldingAddress,
    IdempotencyConflict,
    InvalidInput,
    MemoryIdempotencyKeys,
    ProtocolError,
    RateLimited,
    RetryPolicy,
    TransferAccepted,
    TransferDenied,
    TransferReplayed,
    TransferRequest,
    Unauthorized,
    Unavailable,
    ValueUnit,
    WebhookRequest,
)
from upstream.retry import Retrier, is_retryable

APP_ID = "6f1c2a34-0000-4000-8000-00000000c0de"
ADDR = HoldingAddress(
    account_ref=uuid.UUID(REF), endpoint_ref=uuid.UUID(REF), holding_ref=uuid.UUID(REF)
)


def _gateway(script: Script, **kw: object) -> tuple[GatewayClient, list[float]]:
    sleeps: list[float] = []
    client = GatewayClient(
        "http://gw.test",
        KEY,
        transport=script.transport,
        sleep=sleeps.append,
        rng=random.Random(7),
        **kw,  # type: ignore[arg-type]
    )
    return client, sleeps


def _request(amount: int = 1000) -> TransferRequest:
    return TransferRequest(
        source=ADDR,
        destination=Destination.internal(ADDR),
        value_unit=ValueUnit.fiat("NGN"),
        amount_minor_units=amount,
    )


def test_reads_retry_5xx_and_bad_json_then_converge() -> None:
    script = Script(
        problem(503, "Unavailable", "unavailable-ServiceUnavailable", "down"),
        garbled(),
        httpx.ReadTimeout("slow"),
        ok(environment_value()),
    )
    client, sleeps = _gateway(script)
    env = client.environment()
    assert env.value.is_sandbox
    assert len(script.requests) == 4
    assert len(sleeps) == 3
    assert all(0 <= s <= 5.0 for s in sleeps)
    assert str(script.requests[0].url) == "http://gw.test/v1/environment"


def test_write_retries_reuse_one_idempotency_key_and_close_it() -> None:
    keys = MemoryIdempotencyKeys()
    value = transfer_value()
    script = Script(
        httpx.RemoteProtocolError("dropped"),
        problem(502, "Unavailable", "unavailable-ServiceUnavailable", "bad gateway"),
        ok(value, 202, "transfer"),
    )
    client, _ = _gateway(script, idempotency=keys)
    outcome = client.create_transfer(_request())
    assert isinstance(outcome, TransferAccepted)
    sent = script.keys()
    assert len(sent) == 3 and len(set(sent)) == 1 and sent[0] == str(outcome.idempotency_key)
    entry = keys.entries[outcome.idempotency_key]
    assert (entry.state, entry.outcome, entry.result_ref) == (
        "done",
        "accepted",
        value["transferRef"],
    )


def test_a_key_left_open_by_a_crash_is_reused_by_the_next_attempt() -> None:
    keys = MemoryIdempotencyKeys()
    script = Script(httpx.ReadTimeout("gone"))
    client, _ = _gateway(script, idempotency=keys, retry=RetryPolicy(max_attempts=2))
    with pytest.raises(Unavailable):
        client.create_transfer(_request())
    first_key = script.keys()[0]
    replay = {
        "intakeRef": f"operation-ingress-intake:{uuid.uuid4()}",
        "envelopeRef": str(uuid.uuid4()),
        "occurrence": "ReplayAccepted",
        "transferRef": REF,
    }
    script2 = Script(
        httpx.Response(202, json={"status": 202, "body": {"replay": replay}, "evidence": []})
    )
    client2, _ = _gateway(script2, idempotency=keys)
    outcome = client2.create_transfer(_request())
    assert isinstance(outcome, TransferReplayed)
    assert script2.keys() == [first_key]
    assert outcome.transfer_ref == uuid.UUID(REF)


def test_reservation_denied_is_a_value() -> None:
    client, _ = _gateway(Script(ok(transfer_value("ReservationDenied"), 200, "transfer")))
    outcome = client.create_transfer(_request(10**12))
    assert isinstance(outcome, TransferDenied)
    assert outcome.reason == "InsufficientAvailableBalance"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409])
def test_client_errors_are_never_retried(status: int) -> None:
    script = Script(problem(status, "X", "x", "no"))
    client, sleeps = _gateway(script)
    with pytest.raises(Exception):  # noqa: B017 - each status has its own class; tested below
        client.environment()
    assert len(script.requests) == 1 and sleeps == []


def test_401_fails_fast_and_says_what_to_check() -> None:
    script = Script(
        problem(401, "Unauthorized", "unauthorized-PermissionDenied", "PermissionDenied")
    )
    client, _ = _gateway(script)
    with pytest.raises(Unauthorized) as caught:
        client.environment()
    assert "stray spaces or characters" in str(caught.value)
    assert caught.value.http_status == 401


def test_403_names_the_missing_capability() -> None:
    script = Script(problem(403, "Forbidden", "forbidden-PermissionDenied", "PermissionDenied"))
    client, _ = _gateway(script)
    with pytest.raises(Forbidden) as caught:
        client.quote_transfer(_request())
    assert caught.value.capability == "TransferQuoteRead"
    assert "TransferQuoteRead" in str(caught.value)
    assert caught.value.evidence  # the refusal's receipts are kept


def test_reused_key_with_other_material_says_exactly_that() -> None:
    keys = MemoryIdempotencyKeys()
    script = Script(
        problem(
            400,
            "InvalidInput",
            "invalid-Input",
            "An idempotent intake cannot change the request envelope for an existing identity",
        )
    )
    client, _ = _gateway(script, idempotency=keys)
    with pytest.raises(IdempotencyConflict) as caught:
        client.create_transfer(_request())
    text = str(caught.value)
    assert "already used" in text and "different request material" in text
    (entry,) = keys.entries.values()
    assert entry.state == "failed"
    # The closed key is not handed out again: a corrected request gets a new one.
    assert keys.key_for("transfer.create", {"x": 1}) != entry.key


def test_429_honours_retry_after() -> None:
    script = Script(
        problem(429, "RateLimited", "rate-limited-TooManyRequests", "slow", {"Retry-After": "2"}),
        ok(environment_value()),
    )
    client, sleeps = _gateway(script)
    client.environment()
    assert sleeps == [2.0]


def test_429_beyond_the_deadline_is_raised_with_its_retry_after() -> None:
    script = Script(
        problem(429, "RateLimited", "rate-limited-TooManyRequests", "slow", {"Retry-After": "60"})
    )
    client, sleeps = _gateway(script, retry=RetryPolicy(deadline=5.0))
    with pytest.raises(RateLimited) as caught:
        client.environment()
    assert caught.value.retry_after == 60.0 and sleeps == []


def test_attempts_stop_at_the_total_deadline() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    def attempt(number: int, left: float) -> str:
        now[0] += 4.0
        raise Unavailable("down")

    retrier = Retrier(
        RetryPolicy(max_attempts=100, base_delay=1.0, max_delay=1.0, deadline=10.0),
        clock=lambda: now[0],
        sleep=sleep,
        rng=random.Random(1),
    )
    with pytest.raises(Unavailable) as caught:
        retrier.run(attempt, safe=True)
    assert now[0] <= 10.0 + 4.0
    assert caught.value.attempts >= 2
    assert "gave up after" in str(caught.value)


def test_retry_rules() -> None:
    assert is_retryable(Unavailable("x", maybe_processed=False), safe=False)
    assert not is_retryable(Unavailable("x"), safe=False)
    assert is_retryable(Unavailable("x"), safe=True)
    assert is_retryable(RateLimited("x", retry_after=1), safe=False)
    assert not is_retryable(ProtocolError("x"), safe=False)
    assert not is_retryable(Unauthorized("x"), safe=True)


def test_unprotected_company_write_is_retried_only_when_never_sent() -> None:
    hook = {
        "webhookId": "wh_1",
        "url": "https://recon.test/hook",
        "eventTypes": ["PAYMENT_RECEIVED"],
        "status": "ACTIVE",
        "createdAt": "2026-11-22T00:48:01.123Z",
        "totalDeliveries": 0,
        "successfulDeliveries": 0,
        "failedDeliveries": 0,
    }
    created = httpx.Response(
        201,
        json={
            "success": True,
            "message": "ok",
            "data": hook,
            "timestamp": "2026-11-22T00:48:01.123Z",
        },
    )
    request = WebhookRequest(
        url="https://recon.test/hook", event_types=["PAYMENT_RECEIVED"], secret="whsec_abc"
    )
    script = Script(httpx.ConnectError("refused"), created)
    client = CompanyClient(
        "http://co.test", "ck_test_x", APP_ID, transport=script.transport, sleep=lambda s: None
    )
    assert client.register_webhook(request).status == "ACTIVE"
    assert len(script.requests) == 2
    assert str(script.requests[1].url) == "http://co.test/company/v1/webhooks/register"

    script = Script(
        httpx.Response(503, json={"success": False, "message": "down", "data": None}), created
    )
    client = CompanyClient(
        "http://co.test", "ck_test_x", APP_ID, transport=script.transport, sleep=lambda s: None
    )
    with pytest.raises(Unavailable):
        client.register_webhook(request)
    assert len(script.requests) == 1


def test_stray_whitespace_in_a_key_is_reported_without_sending_or_echoing() -> None:
    script = Script(ok(environment_value()))
    client = GatewayClient("http://gw.test", KEY + "\n", transport=script.transport)
    with pytest.raises(Unauthorized) as caught:
        client.environment()
    assert caught.value.local
    assert "stray space" in str(caught.value) and KEY not in str(caught.value)
    assert script.requests == []


def test_secrets_never_reach_messages_reprs_or_logs() -> None:
    company_key = "ck_test_very-secret-company-key"
    echo = problem(400, "InvalidInput", "invalid-Input", f"bad header Bearer {KEY}")
    script = Script(echo)
    client, _ = _gateway(script)
    with capture_logs() as logs, pytest.raises(InvalidInput) as caught:
        client.environment()
    company_script = Script(
        httpx.Response(
            401, json={"success": False, "message": f"bad {company_key} {APP_ID}", "data": None}
        )
    )
    company = CompanyClient(
        "http://co.test", company_key, APP_ID, transport=company_script.transport
    )
    with capture_logs() as more_logs, pytest.raises(Unauthorized) as company_caught:
        company.name_enquiry()
    for text in (
        str(caught.value),
        repr(caught.value),
        repr(client),
        str(company_caught.value),
        repr(company_caught.value),
        repr(company),
        repr(company_caught.value.info),
        repr(caught.value.info),
        repr(logs + more_logs),
    ):
        assert KEY not in text and company_key not in text and APP_ID not in text
    assert {e["event"] for e in logs} == {"upstream.request"}
    assert script.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert company_script.requests[0].headers["X-App-Id"] == APP_ID
