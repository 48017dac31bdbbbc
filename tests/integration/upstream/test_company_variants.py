"""The company client under every provider the spec's silences allow, over real HTTP.

Each variant is a sandbox playing one choice of success envelope, registration status, refusal
status, retryPolicy members and Retry-After; the client must give the same typed results under
all of them. The client's waits are recorded rather than slept (its `sleep` is the test's), so
each test reads the exact waits it asked for, whatever the machine's load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from sandbox.variants import PRESETS, ProviderVariant
from tests.integration.upstream.conftest import APP_ID, COMPANY_KEY, FAST, Control, Counting
from upstream import CompanyClient, InvalidInput, RetryPolicy, Unavailable, WebhookRequest
from upstream.errors import ResponseTooLarge
from upstream.wire.company_types import WebhookRetryPolicy

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

VARIANTS: dict[str, ProviderVariant] = {
    **PRESETS,
    "data-200": dataclasses.replace(
        PRESETS["recon"], name="data-200", company_envelope="data", register_status=200
    ),
    "strict-date": dataclasses.replace(
        PRESETS["sparse"],
        name="strict-date",
        retry_policy_fields="strict-other",
        retry_after_form="http-date",
    ),
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def _server(request: pytest.FixtureRequest) -> Iterator[SandboxServer]:
    config = SandboxConfig(transfer_finality_delay_seconds=3600, variant=VARIANTS[request.param])
    with SandboxServer(config) as server:
        yield server


@pytest.fixture
def sandbox(_server: SandboxServer) -> SandboxServer:
    """A sandbox playing one variant, emptied for this test."""
    _server.state.reset()
    return _server


@pytest.fixture
def slept() -> list[float]:
    """Every wait the client asked for, in seconds, in order."""
    return []


@pytest.fixture
def company(sandbox: SandboxServer, wire: Counting, slept: list[float]) -> Iterator[CompanyClient]:
    """The company client with its waits recorded in `slept` instead of slept."""
    with CompanyClient(
        sandbox.base_url, COMPANY_KEY, APP_ID, transport=wire, retry=FAST, sleep=slept.append
    ) as client:
        yield client


def variant_of(sandbox: SandboxServer) -> ProviderVariant:
    return sandbox.config.variant


def hook_request(
    url: str = "https://recon.example/webhooks/company",
    *,
    description: str | None = None,
    is_active: bool = True,
    retry_policy: WebhookRetryPolicy | None = None,
) -> WebhookRequest:
    return WebhookRequest(
        url=url,
        event_types=["PAYMENT_RECEIVED"],
        secret=SECRET,
        description=description,
        is_active=is_active,
        retry_policy=retry_policy,
    )


def test_register_and_list_read_every_envelope_and_status(
    company: CompanyClient, sandbox: SandboxServer
) -> None:
    hook = company.register_webhook(hook_request(description="recon"))
    assert hook.status == "ACTIVE" and hook.webhook_id.startswith("wh_")
    inactive = company.register_webhook(hook_request("https://b.example/h", is_active=False))
    assert inactive.status == "INACTIVE"
    listed = company.list_webhooks()
    assert {w.webhook_id for w in listed.webhooks} == {hook.webhook_id, inactive.webhook_id}
    assert (listed.total_count, listed.active_count, listed.inactive_count) == (2, 1, 1)
    active = company.list_webhooks(status="ACTIVE")
    assert [w.webhook_id for w in active.webhooks] == [hook.webhook_id]


def test_a_refusal_is_invalid_input_whatever_its_status(
    company: CompanyClient, sandbox: SandboxServer, wire: Counting
) -> None:
    with pytest.raises(InvalidInput) as caught:
        company.register_webhook(hook_request("not a url"))
    refused = caught.value
    assert refused.http_status == variant_of(sandbox).company_refusal_status
    assert refused.info.provider_message is not None and "url" in refused.info.provider_message
    assert "url" in str(refused) and SECRET not in str(refused)
    assert wire.count("/webhooks/register") == 1
    assert company.list_webhooks().webhooks == ()


def test_our_retry_policy_refused_by_the_provider_still_registers(
    company: CompanyClient, sandbox: SandboxServer, wire: Counting
) -> None:
    hook = company.register_webhook(hook_request(retry_policy=WebhookRetryPolicy(max_attempts=4)))
    held = sandbox.state.webhooks[hook.webhook_id]
    if variant_of(sandbox).retry_policy_fields == "strict-other":
        # Refused once (nothing registered), then registered on the provider's own schedule.
        assert wire.count("/webhooks/register") == 2 and held.retry_policy is None
    else:
        assert wire.count("/webhooks/register") == 1
        assert held.retry_policy is not None and held.retry_policy["maxAttempts"] == 4
    assert [w.webhook_id for w in company.list_webhooks().webhooks] == [hook.webhook_id]


def test_retry_after_on_503_is_waited(
    company: CompanyClient,
    sandbox: SandboxServer,
    control: Control,
    wire: Counting,
    slept: list[float],
) -> None:
    control.fault("GET /company/v1/webhooks", "error_5xx", count=1, seconds=2)
    assert company.list_webhooks().webhooks == ()
    assert wire.count("/webhooks") == 2
    [waited] = slept
    if variant_of(sandbox).retry_after_on_503:
        # An HTTP date has whole-second resolution and is measured against the answer's Date
        # header, which the web server refreshes once a second: 1 to 3 s of the two asked.
        assert 1.0 <= waited <= 3.0
    else:
        assert waited <= FAST.max_delay  # the policy's own backoff


def test_a_long_retry_after_is_capped(
    sandbox: SandboxServer, control: Control, wire: Counting, slept: list[float]
) -> None:
    if not variant_of(sandbox).retry_after_on_503:
        pytest.skip("this provider sends no Retry-After with a 503")
    policy = dataclasses.replace(FAST, max_retry_after=0.5)
    control.fault("GET /company/v1/webhooks", "error_5xx", count=1, seconds=600)
    with CompanyClient(
        sandbox.base_url, COMPANY_KEY, APP_ID, transport=wire, retry=policy, sleep=slept.append
    ) as c:
        assert c.list_webhooks().webhooks == ()
    assert slept == [0.5]
    assert wire.count("/webhooks") == 2


def test_retry_after_on_429_is_waited_in_either_form(
    company: CompanyClient, control: Control, wire: Counting, slept: list[float]
) -> None:
    control.fault("GET /company/v1/accounts/name-enquiry", "rate_limit_429", count=1, seconds=2)
    assert company.name_enquiry().success
    [waited] = slept
    # As a delta: exactly 2 s. As an HTTP date (whole seconds) measured against the answer's
    # Date header, which the web server refreshes once a second: 1 to 3 s, never 0, never more.
    assert 1.0 <= waited <= 3.0
    assert wire.count("/name-enquiry") == 2


def test_an_oversized_answer_is_refused_naming_the_limit(
    company: CompanyClient, sandbox: SandboxServer, wire: Counting
) -> None:
    for n in range(10):
        company.register_webhook(hook_request(f"https://h{n}.example/webhooks/company"))
    small = CompanyClient(
        sandbox.base_url, COMPANY_KEY, APP_ID, transport=wire, retry=FAST, max_response_bytes=2048
    )
    with small, pytest.raises(ResponseTooLarge) as caught:
        small.list_webhooks()
    assert caught.value.limit_bytes == 2048 and "2,048-byte limit" in str(caught.value)
    assert wire.count("/webhooks", "GET") == 1  # the same body would come back: not retried
    assert len(company.list_webhooks().webhooks) == 10  # the default limit reads it


def test_the_deadline_still_bounds_a_provider_that_asks_for_more(
    sandbox: SandboxServer, control: Control, slept: list[float]
) -> None:
    if not variant_of(sandbox).retry_after_on_503:
        pytest.skip("this provider sends no Retry-After with a 503")
    control.fault("GET /company/v1/webhooks", "error_5xx", count=1, seconds=30)
    policy = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, deadline=2.0)
    with (
        CompanyClient(
            sandbox.base_url, COMPANY_KEY, APP_ID, retry=policy, sleep=slept.append
        ) as client,
        pytest.raises(Unavailable) as caught,
    ):
        client.list_webhooks()
    # Handed to the caller at once (no wait asked for), with the provider's full figure to
    # reschedule by.
    assert slept == []
    assert caught.value.retry_after is not None and caught.value.retry_after >= 29.0
