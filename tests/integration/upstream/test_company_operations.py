"""Every company API operation, through the sandbox over HTTP."""

from __future__ import annotations

import pytest

from sandbox.server import SandboxServer
from tests.integration.upstream.conftest import APP_ID, COMPANY_KEY, Control, Counting
from upstream import CompanyClient, InvalidInput, Unauthorized, Unavailable, WebhookRequest
from upstream.wire.company_types import WebhookRetryPolicy

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_register_then_list_webhooks(company: CompanyClient) -> None:
    hook = company.register_webhook(
        WebhookRequest(
            url="https://recon.example/webhooks/company",
            event_types=["PAYMENT_RECEIVED", "TRANSACTION_FAILED"],
            secret=SECRET,
            description="recon",
            retry_policy=WebhookRetryPolicy(max_attempts=3),
        )
    )
    assert hook.status == "ACTIVE" and hook.webhook_id
    assert hook.created_at is not None and hook.created_at.tzinfo is not None
    listed = company.list_webhooks()
    assert [w.webhook_id for w in listed.webhooks] == [hook.webhook_id]
    assert (listed.total_count, listed.active_count) == (1, 1)
    assert company.list_webhooks(status="SUSPENDED").webhooks == ()
    assert len(company.list_webhooks(event_type="PAYMENT_RECEIVED").webhooks) == 1


def test_a_refused_registration_says_why(company: CompanyClient, sandbox: SandboxServer) -> None:
    with pytest.raises(InvalidInput) as caught:
        company.register_webhook(
            WebhookRequest(url="not a url", event_types=["PAYMENT_RECEIVED"], secret=SECRET)
        )
    refusal = sandbox.config.variant.company_refusal_status
    assert "url" in str(caught.value) and caught.value.http_status == refusal


def test_name_enquiry_confirms_credentials(company: CompanyClient) -> None:
    answer = company.name_enquiry("0123456789")
    assert answer.success and answer.data is None and answer.timestamp is not None


@pytest.mark.parametrize(
    "key,app_id",
    [("ck_test_wrong", APP_ID), (COMPANY_KEY, "6f1c2a34-0000-4000-8000-000000000000")],
)
def test_wrong_credentials_fail_fast_with_plain_words(
    sandbox: SandboxServer, wire: Counting, key: str, app_id: str
) -> None:
    client = CompanyClient(sandbox.base_url, key, app_id, transport=wire)
    with pytest.raises(Unauthorized) as caught:
        client.name_enquiry()
    assert "stray spaces or characters" in str(caught.value)
    assert len(wire.requests) == 1
    assert key not in str(caught.value) and app_id not in repr(caught.value)


def test_unprotected_registration_is_not_repeated_after_a_dropped_answer(
    company: CompanyClient, control: Control, wire: Counting
) -> None:
    control.fault("POST /company/v1/webhooks/register", "drop_connection", count=1)
    with pytest.raises(Unavailable) as caught:
        company.register_webhook(
            WebhookRequest(
                url="https://recon.example/h", event_types=["KYC_VERIFIED"], secret=SECRET
            )
        )
    assert caught.value.maybe_processed
    assert wire.count("/webhooks/register") == 1
    # It did land: a caller must list before registering again, never blindly repeat.
    assert len(company.list_webhooks().webhooks) == 1


def test_reads_converge_through_company_faults(
    company: CompanyClient, control: Control, wire: Counting
) -> None:
    control.fault("GET /company/v1/accounts/name-enquiry", "error_5xx", count=2)
    control.fault("GET /company/v1/webhooks", "malformed_json", count=1)
    assert company.name_enquiry().success
    assert company.list_webhooks().webhooks == ()
    assert wire.count("/name-enquiry") == 3 and wire.count("/webhooks") == 2
