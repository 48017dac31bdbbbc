"""Every payload shape and delivery id style, end to end: sandbox -> receiver -> workers -> store.

The sandbox plays a provider (`ProviderVariant.payload_shape` x `delivery_id`, and bodies whose
outcome only the event type says, `body_outcome`) and delivers real
signed webhooks over HTTP to recon's web app under uvicorn; recon's embedded workers read them
with the configured payload shapes. The sandbox's own event log (its canonical events, with
major-unit amounts) is the truth each stored notification is compared with.

Then the path for a shape recon does not know yet: deliveries are quarantined with one alert
naming what is missing; recon learns the shape from RECON_PAYLOAD_FIELD_MAP; a bulk replay,
through the API and through the CLI, turns every one into a notification and resolves the alert.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import load_settings
from recon.cli.main import cli
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Alert, Delivery, Notification
from sandbox.config import SandboxConfig, parse_timestamp
from sandbox.events import minor_units
from sandbox.server import SandboxServer
from sandbox.variants import BodyOutcome, DeliveryIdStyle, PayloadShape, ProviderVariant
from tests.integration.app.receiver_helpers import ADMIN, ServedApp, free_port, wait_for
from tests.integration.app.sandbox_driver import SandboxDriver
from workers import EmbeddedWorkers, start_embedded
from workers.dispatch import enqueue_process_delivery

ALL_EVENTS = 6  # two ACCOUNT_CREATED, one of each other type
#: The flat shape, described to recon as an operator would, so it need not be built in.
FLAT_AS_FIELD_MAP = {
    "eventId": "id",
    "eventType": "eventType",
    "occurredAt": "createdAt",
    "timestampUnit": "epoch-millis",
    "transferRef": "reference",
    "receiptRef": "receiptReference",
    "accountRef": "accountRef",
    "endpointRef": "endpointRef",
    "holdingRef": "holdingRef",
    "accountNumber": "accountNumber",
    "amount": "amount",
    "currency": "currency",
    "status": "status",
    "narration": "narration",
}
#: Long enough that no periodic job but the sweep runs during a test.
QUIET = "3600"


@pytest.fixture
def store(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    yield make_session_factory(engine)
    engine.dispose()


def sandbox_playing(
    shape: PayloadShape, delivery_id: DeliveryIdStyle, body_outcome: BodyOutcome = "status"
) -> SandboxServer:
    variant = ProviderVariant(
        name=f"{shape}/{delivery_id}/{body_outcome}",
        payload_shape=shape,
        delivery_id=delivery_id,
        body_outcome=body_outcome,
    )
    return SandboxServer(
        SandboxConfig(
            variant=variant,
            transfer_finality_delay_seconds=0.05,
            inbound_posting_delay_seconds=0.01,
            projection_lag_seconds=0.01,
            delivery_retry_schedule=(0.2, 0.5, 1.0),
        )
    )


def recon_env(
    base_env: dict[str, str], db_url: str, sandbox: SandboxServer, port: int
) -> dict[str, str]:
    return {
        **base_env,
        "DATABASE_URL": db_url,
        "RECON_COMPANY_URL": sandbox.base_url,
        "RECON_GATEWAY_URL": sandbox.base_url,
        "RECON_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "RECON_POLL_ACTIVITY_SECONDS": QUIET,
        "RECON_POLL_TRANSFERS_SECONDS": QUIET,
        "RECON_SNAPSHOT_BALANCES_SECONDS": QUIET,
        "RECON_DISCOVER_HOLDINGS_SECONDS": QUIET,
        "RECON_CHECK_SUBSCRIPTION_SECONDS": QUIET,
        "RECON_RECONCILE_SECONDS": QUIET,
        "RECON_SWEEP_SECONDS": "0.5",
        "RECON_DELIVERY_GRACE_SECONDS": "0.1",
    }


@contextmanager
def workers_for(env: dict[str, str]) -> Iterator[EmbeddedWorkers]:
    workers = start_embedded(load_settings(env), lock_seconds=2)
    try:
        yield workers
    finally:
        workers.stop()


@contextmanager
def web_for(env: dict[str, str]) -> Iterator[ServedApp]:
    """recon's web app, registered at the sandbox, handing deliveries to the embedded workers."""
    app = create_app(load_settings(env), enqueue=enqueue_process_delivery, self_register=True)
    port = int(env["RECON_PUBLIC_URL"].rsplit(":", 1)[1])
    with ServedApp(app, port) as served:
        assert app.state["registration"].wait(20) is not None, "recon did not register itself"
        yield served


def raise_every_event(sandbox: SandboxServer) -> None:
    """Each of the five event types, over the sandbox's real HTTP API (six events in all)."""
    provider = SandboxDriver(sandbox.base_url)
    try:
        funded, other = provider.endpoint(), provider.endpoint()
        provider.credit(funded, 500_000)
        wait_for(
            lambda: sandbox.state.holdings[funded["holdingRef"]].available >= 500_000,
            10,
            "the credit to post and project",
        )
        provider.transfer(funded, other, 1_050, "settle")
        provider.transfer(funded, other, 2_000, "fail")
        provider.kyc_verified(other)
    finally:
        provider.close()


def rows(store: sessionmaker[Session], model: type[Any]) -> list[Any]:
    with store() as session:
        return list(session.scalars(select(model).order_by(model.id)))


def settled(store: sessionmaker[Session], state: str) -> list[Delivery] | None:
    """All six deliveries stored and none waiting: every one in `state`, or None."""
    found = rows(store, Delivery)
    if len(found) < ALL_EVENTS or any(r.state == "pending" for r in found):
        return None
    assert {r.state for r in found} == {state}, [(r.state, r.error) for r in found]
    return found


def assert_notifications_match_the_sandbox(
    store: sessionmaker[Session], sandbox: SandboxServer, shape: str, delivery_id: str
) -> None:
    """Each canonical event the sandbox sent is one notification saying exactly the same."""
    events = {e["id"]: e for e in sandbox.state.events}
    log = [a for a in sandbox.state.deliveries if a.outcome == "delivered"]
    header_of = {a.event_id: a.headers["webhook-id"] for a in log}
    notes = rows(store, Notification)
    assert sorted(n.body_id for n in notes) == sorted(events)
    for n in notes:
        event = events[n.body_id]
        data = event["data"]
        assert n.event_id == header_of[n.body_id], "identity is the webhook-id header"
        if delivery_id == "message-id":
            assert n.event_id.startswith("msg_") and n.event_id != n.body_id
        else:
            assert n.event_id == n.body_id
        assert (n.payload_shape, n.event_type) == (shape, event["event"])
        sent_ms = parse_timestamp(event["createdAt"])
        assert sent_ms is not None
        assert n.occurred_at == datetime.fromtimestamp(sent_ms / 1000, tz=UTC)
        amount = data["amount"]
        assert n.amount_minor == (minor_units(amount, data["currency"]) if amount else None)
        assert (n.currency, n.claimed_status) == (data["currency"], data["status"])
        for column, field in (
            ("transfer_ref", "transferRef"),
            ("receipt_ref", "receiptRef"),
            ("holding_ref", "holdingRef"),
            ("endpoint_ref", "endpointRef"),
        ):
            want = uuid.UUID(data[field]) if data[field] else None
            assert getattr(n, column) == want, (event["event"], column)
        assert n.account_number == data["accountNumber"]


@pytest.mark.parametrize("delivery_id", ["body-id", "message-id"])
@pytest.mark.parametrize("shape", ["recon", "standard-webhooks", "flat"])
def test_every_shape_lands_as_matching_notifications(
    shape: PayloadShape,
    delivery_id: DeliveryIdStyle,
    base_env: dict[str, str],
    db_url: str,
    store: sessionmaker[Session],
) -> None:
    with sandbox_playing(shape, delivery_id) as sandbox:
        env = recon_env(base_env, db_url, sandbox, free_port())
        with workers_for(env), web_for(env):
            raise_every_event(sandbox)
            wait_for(lambda: settled(store, "processed"), 30, f"{shape}/{delivery_id} to process")
        assert_notifications_match_the_sandbox(store, sandbox, shape, delivery_id)
    assert rows(store, Alert) == []


def sent_without_status(sandbox: SandboxServer) -> None:
    """Every body the sandbox delivered lacks a `status` member (the variant under test)."""
    delivered = [a.body for a in sandbox.state.deliveries if a.outcome == "delivered"]
    assert len(delivered) >= ALL_EVENTS
    assert not [b for b in delivered if b'"status"' in b]


@pytest.mark.parametrize("shape", ["recon", "standard-webhooks", "flat"])
def test_bodies_without_status_land_with_their_event_types_outcome(
    shape: PayloadShape, base_env: dict[str, str], db_url: str, store: sessionmaker[Session]
) -> None:
    """The sandbox's canonical events keep the status its ledger decided; recon, reading bodies
    without one, must arrive at the same words from the event type alone."""
    with sandbox_playing(shape, "body-id", "event-type") as sandbox:
        env = recon_env(base_env, db_url, sandbox, free_port())
        with workers_for(env), web_for(env):
            raise_every_event(sandbox)
            wait_for(lambda: settled(store, "processed"), 30, f"{shape} without status")
        sent_without_status(sandbox)
        assert_notifications_match_the_sandbox(store, sandbox, shape, "body-id")
    assert rows(store, Alert) == []


#: A provider's flat body without status, learned with constants for what it never names.
FLAT_WITH_CONSTANTS = {
    **{k: v for k, v in FLAT_AS_FIELD_MAP.items() if k not in ("currency", "status")},
    "currency": "=NGN",
}


def test_a_field_map_with_a_constant_currency_and_no_status(
    base_env: dict[str, str], db_url: str, store: sessionmaker[Session]
) -> None:
    with sandbox_playing("flat", "body-id", "event-type") as sandbox:
        env = {
            **recon_env(base_env, db_url, sandbox, free_port()),
            "RECON_PAYLOAD_SHAPES": "field-map",
            "RECON_PAYLOAD_FIELD_MAP": json.dumps(FLAT_WITH_CONSTANTS),
        }
        with workers_for(env), web_for(env):
            raise_every_event(sandbox)
            wait_for(lambda: settled(store, "processed"), 30, "the learned deliveries")
        sent_without_status(sandbox)
        events = {e["id"]: e for e in sandbox.state.events}
        notes = rows(store, Notification)
        assert sorted(n.body_id for n in notes) == sorted(events)
        for n in notes:
            data = events[n.body_id]["data"]
            assert (n.payload_shape, n.currency) == ("field-map", "NGN")
            assert n.claimed_status == data["status"], n.event_type
            amount = data["amount"]
            assert n.amount_minor == (minor_units(amount, "NGN") if amount else None)
    assert rows(store, Alert) == []


def test_an_event_type_without_outcome_is_quarantined_until_the_table_names_it(
    base_env: dict[str, str], db_url: str, store: sessionmaker[Session]
) -> None:
    """The operator's table lacks TRANSACTION_FAILED: that delivery alone waits in quarantine,
    its alert saying which path and which variable; once the table names it, a replay reads it."""
    with sandbox_playing("standard-webhooks", "message-id", "event-type") as sandbox:
        env = recon_env(base_env, db_url, sandbox, free_port())
        partial = "PAYMENT_RECEIVED=successful,TRANSACTION_COMPLETED=successful"
        with web_for(env) as served:
            with workers_for({**env, "RECON_EVENT_OUTCOMES": partial}):
                raise_every_event(sandbox)
                wait_for(
                    lambda: (
                        len(rows(store, Delivery)) == ALL_EVENTS
                        and all(r.state != "pending" for r in rows(store, Delivery))
                    ),
                    30,
                    "every delivery read or quarantined",
                )
            (failed,) = [r for r in rows(store, Delivery) if r.state == "quarantined"]
            assert failed.event_type == "TRANSACTION_FAILED"
            (alert,) = rows(store, Alert)
            assert (alert.kind, alert.evidence["missing"]) == (
                "delivery_not_understood",
                ["data.status"],
            )
            assert "RECON_EVENT_OUTCOMES gives it no outcome" in " ".join(
                alert.evidence["problems"]
            )
            assert "RECON_EVENT_OUTCOMES" in alert.evidence["whatToDo"]

            with workers_for(env):  # the built-in table, which names TRANSACTION_FAILED
                replayed = replay_over_http(served, env)
                assert replayed["rowIds"] == [failed.id]
                wait_for(lambda: settled(store, "processed"), 30, "the replayed delivery")
                (alert,) = rows(store, Alert)
                assert alert.state == "resolved"
        assert_notifications_match_the_sandbox(store, sandbox, "standard-webhooks", "message-id")


def replay_over_http(served: ServedApp, env: dict[str, str]) -> dict[str, Any]:
    import httpx

    response = httpx.post(f"{served.base_url}/deliveries/replay?state=quarantined", headers=ADMIN)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def replay_with_the_cli(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> dict[str, Any]:
    monkeypatch.setattr("foundation.logs.configure_logging", lambda *a, **k: None)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("REDIS_URL", raising=False)
    result = CliRunner().invoke(
        cli, ["deliveries", "replay", "--quarantined", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    replayed: dict[str, Any] = json.loads(result.output.strip().splitlines()[-1])
    return replayed


@pytest.mark.parametrize("channel", ["api", "cli"])
def test_unknown_shape_is_quarantined_then_learned_and_replayed(
    channel: str,
    base_env: dict[str, str],
    db_url: str,
    store: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with sandbox_playing("flat", "message-id") as sandbox:
        env = recon_env(base_env, db_url, sandbox, free_port())
        # recon does not know the flat shape yet.
        unaware = {**env, "RECON_PAYLOAD_SHAPES": "recon,standard-webhooks"}
        learned = {
            **env,
            "RECON_PAYLOAD_SHAPES": "recon,standard-webhooks,field-map",
            "RECON_PAYLOAD_FIELD_MAP": json.dumps(FLAT_AS_FIELD_MAP),
        }
        with web_for(env) as served:
            with workers_for(unaware):
                raise_every_event(sandbox)
                quarantined = wait_for(lambda: settled(store, "quarantined"), 30, "quarantine")
            assert rows(store, Notification) == []
            assert all(b"eventType" in r.body for r in quarantined), "bytes kept unchanged"
            (alert,) = rows(store, Alert)
            assert (alert.kind, alert.state) == ("delivery_not_understood", "open")
            assert "event" in alert.evidence["missing"], alert.evidence
            assert {r.shape_problem for r in rows(store, Delivery)} == {alert.fingerprint}
            assert "eventType" in alert.evidence["topLevelMembers"]

            with workers_for(learned):
                if channel == "api":
                    replayed = replay_over_http(served, env)
                else:
                    replayed = replay_with_the_cli(monkeypatch, env)
                assert (replayed["replayed"], replayed["remaining"]) == (ALL_EVENTS, 0)
                assert replayed["rowIds"] == [r.id for r in quarantined]
                wait_for(lambda: settled(store, "processed"), 30, "the replayed deliveries")
                (alert,) = rows(store, Alert)
                assert (alert.state, alert.resolved_by) == ("resolved", "recon")
        assert_notifications_match_the_sandbox(store, sandbox, "field-map", "message-id")


def test_bulk_replay_refuses_what_it_cannot_do(
    client: Any, monkeypatch: pytest.MonkeyPatch, recon_env: dict[str, str]
) -> None:
    """Both doors say what was wrong and what to do, and change nothing."""
    assert client.post("/deliveries/replay?state=quarantined").status_code == 401
    wrong = client.post("/deliveries/replay?state=processed", headers=ADMIN)
    assert wrong.status_code == 400
    assert "expected one of quarantined, pending" in wrong.text
    assert client.post("/deliveries/replay", headers=ADMIN).status_code == 400
    empty = client.post("/deliveries/replay?state=quarantined", headers=ADMIN)
    assert empty.json() == {"state": "quarantined", "replayed": 0, "rowIds": [], "remaining": 0}

    monkeypatch.setattr("foundation.logs.configure_logging", lambda *a, **k: None)
    for name, value in recon_env.items():
        monkeypatch.setenv(name, value)
    for args in ([], ["1", "--quarantined"], ["--quarantined", "--pending"]):
        result = CliRunner().invoke(cli, ["deliveries", "replay", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "give one ROW_ID, or --quarantined, or --pending" in result.output
