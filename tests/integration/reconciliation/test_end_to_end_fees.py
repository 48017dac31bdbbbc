"""Against a sandbox that charges a fee on every transfer, recon raises nothing but the truth.

The sandbox charges a flat fee plus basis points, under each bearer recon asks for, and lays
the fee legs out as a provider variant says (in the transfer's journal or one of their own,
under the transfer's receipt or one of their own named by the fee lines or by nothing,
under the principal's journalKind or names recon has never seen, fee lines in any of three
shapes). recon's embedded workers discover the holdings, read the postings, poll the transfers
and take in the webhooks; then one reconciliation pass. Every transfer and every leg matches
and adds up for its bearer: no amount_mismatch. The one transfer created against a quote while
the sandbox charges more than it quoted is a fee_mismatch, and only that.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import msgspec
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation import run_pass
from reconciliation.alerts.lifecycle import fingerprint
from reconciliation.reports import ReportWindow, build_report, report_as_dict
from reconciliation.store.models import Alert, Holding, Notification, Transfer
from reconciliation.store.types import utcnow
from reconciliation.transfers.requests import request_transfer
from sandbox.endpoints import COLLECTION_CHILD
from sandbox.fees import FeeRate, FeeSchedule
from sandbox.server import SandboxServer
from sandbox.variants import parse_variant
from tests.integration.reconciliation.fault_world import (
    EVENT_TYPES,
    POLICY,
    address,
    count,
    embedded_workers,
    past_the_deadlines,
    wait_for,
)
from tests.integration.workers.conftest import fast_sandbox_config
from tests.integration.workers.inbox_receiver import inbox_receiver
from tests.integration.workers.ledger_compare import ledger_heard
from tests.integration.workers.scenario import SECRET, transfer_request
from upstream.company import CompanyClient
from upstream.gateway import GatewayClient
from upstream.wire.balances import CreditRequest
from upstream.wire.common import ValueUnit
from upstream.wire.company_types import WebhookRequest
from upstream.wire.fees import BEARERS, fee_instruction
from workers import EmbeddedWorkers

#: 25.00 NGN plus 0.1% of the amount: each transfer below pays a different fee.
SCHEDULE = FeeSchedule(rate=FeeRate(flat_minor_units=2_500, basis_points=10))
#: What the sandbox charges above the quote while the quoted transfer is created.
DRIFT = 300
FUNDS = 5_000_000
#: One transfer per bearer, then the quoted one (sender pays).
AMOUNTS = {
    "sender_pays": 100_000,
    "receiver_pays": 120_000,
    "application_pays": 140_000,
    "split": 160_000,
}
QUOTED_AMOUNT = 180_000


def expected_fee(amount: int) -> int:
    return SCHEDULE.rate.fee(amount)


@pytest.fixture(
    params=[
        "recon,fee_layout=same-journal,fee_journal_kind=transfer_settlement,fee_line_shape=flat",
        "recon,fee_layout=own-journal,fee_journal_kind=distinct,fee_line_shape=nested",
        "recon,fee_layout=same-journal,fee_journal_kind=distinct,fee_line_shape=major",
        "recon,fee_layout=own-receipt,fee_journal_kind=distinct,fee_line_shape=nested",
        "recon,fee_layout=own-receipt,fee_journal_kind=transfer_settlement,fee_line_shape=major",
        "recon,fee_layout=own-receipt-unlinked,fee_journal_kind=distinct,fee_line_shape=flat",
    ],
    ids=[
        "same-journal-flat",
        "own-journal-unknown-kinds-nested",
        "same-journal-unknown-major",
        "own-receipt-named-nested",
        "own-receipt-named-known-kind-major",
        "own-receipt-unlinked-flat",
    ],
)
def sandbox(request: pytest.FixtureRequest) -> Iterator[SandboxServer]:
    config = fast_sandbox_config(fee_schedule=SCHEDULE, variant=parse_variant(request.param))
    with SandboxServer(config) as server:
        yield server


@pytest.fixture
def workers(
    base_env: dict[str, str], db_url: str, sandbox: SandboxServer
) -> Iterator[EmbeddedWorkers]:
    with embedded_workers(base_env, db_url, sandbox) as embedded:
        yield embedded


def open_alerts(sessions: sessionmaker[Session]) -> dict[str, str]:
    with sessions() as s:
        return {
            a.fingerprint: a.subject
            for a in s.scalars(select(Alert).where(Alert.state != "resolved"))
        }


def test_fees_under_every_bearer_and_layout_raise_only_the_fee_the_quote_did_not_say(
    sandbox: SandboxServer, workers: EmbeddedWorkers
) -> None:
    sessions = workers.running.runtime.sessions
    state = sandbox.state
    payer = state.create_endpoint(
        COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", "NGN", emit=False
    )
    payee = state.create_endpoint(
        COLLECTION_CHILD, str(uuid.uuid4()), "business-entity", "NGN", emit=False
    )
    with inbox_receiver(sessions) as url:
        with CompanyClient(
            sandbox.base_url, "ck_test_recon", sandbox.config.company_app_id
        ) as company:
            company.register_webhook(
                WebhookRequest(url=url, event_types=EVENT_TYPES, secret=SECRET)
            )
        from workers.actors import discover_holdings

        discover_holdings.send()
        wait_for("holdings discovered", lambda: count(sessions, Holding) == 2)
        with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
            gateway.simulate_inbound_credit(
                CreditRequest(
                    target=address(payer),
                    value_unit=ValueUnit.fiat("NGN"),
                    amount_minor_units=FUNDS,
                )
            )
            wait_for("the funds", lambda: state.posted_sum(payer.holding_ref) == FUNDS)
            refs: dict[str, uuid.UUID] = {}
            for bearer in BEARERS:
                request = msgspec.structs.replace(
                    transfer_request(address(payer), address(payee), AMOUNTS[bearer]),
                    fee_instruction=fee_instruction(bearer),
                )
                refs[bearer] = request_transfer(gateway, sessions, request, via="cli").transfer_ref
            quoted = msgspec.structs.replace(
                transfer_request(address(payer), address(payee), QUOTED_AMOUNT),
                fee_instruction=fee_instruction("sender_pays"),
            )
            quote = gateway.quote_transfer(quoted).value
            state.fee_schedule = replace(SCHEDULE, drift_minor_units=DRIFT)
            refs["quoted"] = request_transfer(
                gateway, sessions, quoted, via="cli", accepted_quote=quote.wire
            ).transfer_ref
            state.fee_schedule = SCHEDULE

        holdings = [payer.holding_ref, payee.holding_ref]

        def still_missing() -> list[str]:
            missing = []
            if not ledger_heard(sessions, state, holdings):
                missing.append("ledger")
            with sessions() as s:
                done = {t.transfer_ref for t in s.scalars(select(Transfer)) if t.is_successful}
            if done != set(refs.values()):
                missing.append(f"{len(done)} of {len(refs)} transfers settled")
            completed = count(
                sessions, Notification, Notification.event_type == "TRANSACTION_COMPLETED"
            )
            if completed != len(refs):
                missing.append(f"{completed} TRANSACTION_COMPLETED")
            return missing

        wait_for("the store to hear everything", still_missing, seconds=60)
        run_pass(sessions, POLICY, publish=False, now=past_the_deadlines())

    quoted_ref = str(refs["quoted"])
    alerts = open_alerts(sessions)
    assert set(alerts) == {fingerprint("fee_mismatch", quoted_ref)}, alerts
    with sessions() as s:
        stored = {t.transfer_ref: t for t in s.scalars(select(Transfer))}
    for bearer in BEARERS:
        row = stored[refs[bearer]]
        assert (row.fee_bearer, row.fee_charged_minor) == (bearer, expected_fee(AMOUNTS[bearer]))
    quoted_row = stored[refs["quoted"]]
    assert quoted_row.fee_quoted_minor == expected_fee(QUOTED_AMOUNT)
    assert quoted_row.fee_charged_minor == expected_fee(QUOTED_AMOUNT) + DRIFT

    with sessions() as s:
        report = report_as_dict(build_report(s, ReportWindow(until=utcnow())))
    by_bearer = {f["bearer"]: int(f["amountMinor"]) for f in report["fees"]}
    assert (
        by_bearer["sender_pays"]
        == expected_fee(AMOUNTS["sender_pays"]) + expected_fee(QUOTED_AMOUNT) + DRIFT
    )
    assert by_bearer["split"] == expected_fee(AMOUNTS["split"])
