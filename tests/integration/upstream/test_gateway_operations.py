"""Every gateway operation, through the sandbox over HTTP, with typed results and receipts."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from sandbox.config import SandboxConfig
from sandbox.server import SandboxServer
from sandbox.variants import PRESETS
from tests.integration.upstream.conftest import (
    FAST,
    GATEWAY_KEY,
    NGN,
    Control,
    available,
    funded,
    new_endpoint,
)
from upstream import (
    ActivityCursor,
    CreditRequest,
    Destination,
    GatewayClient,
    NotFound,
    StaleGuard,
    TransferAccepted,
    TransferDenied,
    TransferRequest,
)
from upstream.wire.receiving import ReceivingRequest


def test_environment_names_a_sandbox(gateway: GatewayClient) -> None:
    env = gateway.environment()
    assert env.value.environment_kind == "DemoSandbox" and env.value.is_sandbox
    assert env.value.app_status == "Active"
    assert env.evidence and env.evidence[0].source is not None


def test_transfer_quote_create_status_and_settlement(
    gateway: GatewayClient, control: Control
) -> None:
    source = funded(gateway, control, 100_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    request = TransferRequest(
        source=source,
        destination=Destination.internal(dest),
        value_unit=NGN,
        amount_minor_units=25_000,
    )
    quote = gateway.quote_transfer(request)
    assert quote.value.amount_minor_units == 25_000
    assert quote.value.no_fee_reason == "no_configured_fee"
    assert available(gateway, source) == 100_000  # a quote reserves nothing

    outcome = gateway.create_transfer(request, accepted_quote=quote.value.wire)
    assert isinstance(outcome, TransferAccepted)
    assert outcome.http_status == 202 and outcome.transfer.revision == 2
    assert outcome.evidence and outcome.evidence[0].receipt_ref == outcome.transfer.requested_by
    status = gateway.transfer_status(outcome.transfer_ref)
    assert (status.value.status, status.value.is_terminal) == ("awaiting_finality", False)
    assert available(gateway, source) == 75_000

    control.outcome(outcome.transfer_ref, "settle")
    status = gateway.transfer_status(outcome.transfer_ref)
    # Whatever this provider calls a settlement, only isTerminal/isSuccessful say what it is.
    assert (status.value.is_terminal, status.value.is_successful) == (True, True)
    assert status.value.status != "awaiting_finality" and status.value.revision == 3


@pytest.mark.parametrize("vocabulary", ["recon", "alternate"])
def test_terminal_statuses_are_read_verbatim_under_either_vocabulary(vocabulary: str) -> None:
    variant = dataclasses.replace(PRESETS["recon"], status_vocabulary=vocabulary)
    config = SandboxConfig(variant=variant, transfer_finality_delay_seconds=3600)
    with (
        SandboxServer(config) as server,
        GatewayClient(server.base_url, GATEWAY_KEY, retry=FAST) as gateway,
    ):
        control = Control(server.base_url)
        source = funded(gateway, control, 10_000)
        dest = new_endpoint(gateway, "customer_balance_internal")
        refs = {}
        for outcome in ("settle", "fail", "hold"):
            created = gateway.create_transfer(
                TransferRequest(
                    source=source,
                    destination=Destination.internal(dest),
                    value_unit=NGN,
                    amount_minor_units=100,
                )
            )
            assert isinstance(created, TransferAccepted)
            control.outcome(created.transfer_ref, outcome)
            refs[outcome] = created.transfer_ref
        read = {k: gateway.transfer_status(ref).value for k, ref in refs.items()}
    meaning = {k: (s.is_terminal, s.is_successful) for k, s in read.items()}
    assert meaning == {"settle": (True, True), "fail": (True, False), "hold": (False, False)}
    names = {k: s.status for k, s in read.items()}
    expected = {
        "recon": {"settle": "completed", "fail": "failed", "hold": "awaiting_finality"},
        "alternate": {"settle": "settled", "fail": "rejected", "hold": "held"},
    }[vocabulary]
    assert names == expected
    # The spec's only stage pair is implied; other names imply no stage at all.
    assert read["settle"].implied_stage is None


def test_reservation_denied_is_returned_not_raised(
    gateway: GatewayClient, control: Control
) -> None:
    """Invariant 7: an insufficient balance comes back as a denied transfer, not as an error."""
    source = funded(gateway, control, 1_000)
    dest = new_endpoint(gateway, "customer_balance_internal")
    outcome = gateway.create_transfer(
        TransferRequest(
            source=source,
            destination=Destination.internal(dest),
            value_unit=NGN,
            amount_minor_units=5_000,
        )
    )
    assert isinstance(outcome, TransferDenied)
    assert outcome.http_status == 200 and outcome.reason == "InsufficientAvailableBalance"
    status = gateway.transfer_status(outcome.transfer_ref)
    assert (status.value.status, status.value.is_terminal) == ("reservation_denied", True)


def test_unknown_transfer_is_not_found(gateway: GatewayClient) -> None:
    with pytest.raises(NotFound) as caught:
        gateway.transfer_status(uuid.uuid4())
    assert caught.value.http_status == 404 and "no such resource" in str(caught.value)


def test_programmable_endpoint_read_readiness_and_lifecycle(gateway: GatewayClient) -> None:
    """Invariant 7: a stale lifecycle guard is refused and surfaced, never retried by itself."""
    holding = new_endpoint(gateway)
    read = gateway.get_programmable_endpoint(holding.endpoint_ref)
    assert read.value.found and read.value.endpoint is not None
    ep = read.value.endpoint
    assert ep.locators and ep.locators[0].account_number is not None
    assert len(ep.locators[0].account_number) == 10
    guard = ep.lifecycle_guard
    assert guard is not None

    ready = gateway.endpoint_readiness(holding.endpoint_ref)
    families = {f.family: f.status for f in ready.value.operation_families}
    assert families["receive_funds"] == "ready"

    suspended = gateway.suspend_endpoint(holding.endpoint_ref, guard, "operator_hold")
    assert suspended.value.current_posture == "suspended"
    assert suspended.value.current_state_version == guard.state_version + 1
    assert suspended.idempotency_key is not None

    # The old guard is stale now: refused with 409, never retried.
    with pytest.raises(StaleGuard) as caught:
        gateway.resume_endpoint(holding.endpoint_ref, guard)
    assert "never retried" in str(caught.value)
    assert caught.value.attempts == 1

    fresh = gateway.get_programmable_endpoint(holding.endpoint_ref).value.endpoint
    assert fresh is not None and fresh.lifecycle_guard == suspended.value.lifecycle_guard
    assert fresh.lifecycle_guard is not None
    resumed = gateway.resume_endpoint(holding.endpoint_ref, fresh.lifecycle_guard)
    assert resumed.value.current_posture == "active"


def test_unknown_endpoint_read(gateway: GatewayClient) -> None:
    try:
        read = gateway.get_programmable_endpoint(uuid.uuid4())
    except NotFound:
        return
    assert read.value.kind == "not_found" and not read.value.found


def test_endpoint_lister_walks_every_page_at_100(gateway: GatewayClient, control: Control) -> None:
    made = control.bulk(holdings=205, postings=0)
    rows = list(gateway.iter_programmable_endpoints())
    assert len(rows) == 205
    assert {str(r.endpoint_ref) for r in rows} == {h["endpointRef"] for h in made}
    page = gateway.list_programmable_endpoints(page_size=10)
    assert len(page.value.rows) == 10


def test_receiving_endpoint_create_and_current(gateway: GatewayClient) -> None:
    owner = uuid.uuid4()
    created = gateway.create_receiving_endpoint(
        ReceivingRequest(owner_ref=owner, owner_kind="BusinessEntity", value_unit=NGN)
    )
    act = created.value
    assert act.holding_refs and created.idempotency_key is not None
    current = gateway.current_receiving_endpoint(owner, "BusinessEntity", NGN)
    assert current.value.resource.endpoint_ref == act.endpoint_ref
    assert current.value.account.account_ref == act.account_ref


def test_inbound_credit_posts_and_the_activity_reader_pages_exactly(
    gateway: GatewayClient, control: Control
) -> None:
    holding = new_endpoint(gateway)
    sims = [
        gateway.simulate_inbound_credit(
            CreditRequest(target=holding, value_unit=NGN, amount_minor_units=100 + i)
        )
        for i in range(5)
    ]
    control.settle_now()
    assert all(s.value.stage == "EvidencePublished" for s in sims)
    # newest_first: the direction the spec shows, served by every provider variant.
    pages = list(
        gateway.iter_activity(
            holding.account_ref,
            holding.endpoint_ref,
            holding.holding_ref,
            page_size=2,
            sort_direction="newest_first",
        )
    )
    assert [len(p.entries) for p in pages] == [2, 2, 1]
    receipts = [e.receipt_ref for p in pages for e in p.entries]
    assert receipts == [s.value.accounts_posting_receipt_ref for s in reversed(sims)]
    # Resuming later from the last position (the gateway's cursor, or the last entry's own
    # when the provider gives none on its last page) finds nothing new and keeps it.
    last = pages[-1].next_cursor
    assert last is not None and last.after_line_ref == str(pages[-1].entries[-1].line_ref)
    (empty,) = gateway.iter_activity(
        holding.account_ref,
        holding.endpoint_ref,
        holding.holding_ref,
        cursor=last,
        sort_direction="newest_first",
    )
    assert empty.entries == () and empty.next_cursor == last
    snap = gateway.balance(holding.account_ref, holding.endpoint_ref)
    assert snap.value.holding_balances[0].settled_minor_units == sum(100 + i for i in range(5))


def test_activity_over_ties_neither_skips_nor_repeats(
    gateway: GatewayClient, control: Control
) -> None:
    (made,) = control.bulk(holdings=1, postings=450)
    account, endpoint, holding = (
        uuid.UUID(made[k]) for k in ("accountRef", "endpointRef", "holdingRef")
    )
    seen: list[tuple[uuid.UUID, uuid.UUID]] = []
    cursor: ActivityCursor | None = None
    # Asked 200 a page; a provider with a lower cap serves fewer, and the reader reads on.
    pages = gateway.iter_activity(
        account, endpoint, holding, page_size=200, sort_direction="newest_first"
    )
    for page in pages:
        seen.extend((e.journal_ref, e.line_ref) for e in page.entries)
        cursor = page.next_cursor
    assert len(seen) == 450 and len(set(seen)) == 450
    assert cursor is not None and cursor.sort_direction == "newest_first"
