"""discover_holdings, snapshot_balances and check_subscription against the sandbox."""

from __future__ import annotations

import base64
import time
import uuid

from sqlalchemy import select

from reconciliation.notifications.subscriptions import record_webhook
from reconciliation.store.db import transaction
from reconciliation.store.models import ActivityCursor, Alert, BalanceSnapshot, Holding, Locator
from sandbox.bulk import build_bulk
from sandbox.server import SandboxServer
from tests.integration.workers.sandbox_probe import RequestProbe
from upstream.wire.company_types import WebhookRequest
from workers import Runtime
from workers.actors.balances import snapshot_watched
from workers.actors.holdings import discover
from workers.actors.subscription import check_webhooks

SECRET = "whsec_" + base64.b64encode(b"workers-subscription-check-secret").decode()


def test_discovery_follows_the_register_to_its_end_and_reads_only_what_changed(
    runtime: Runtime, sandbox: SandboxServer, probe: RequestProbe
) -> None:
    made = build_bulk(sandbox.state, holdings=103, postings=0, seed=21)
    internal = sandbox.state.create_endpoint(
        "customer_balance_internal", str(uuid.uuid4()), "business-entity", "NGN", emit=False
    )
    first = discover(runtime)
    assert (first.listed, first.read, len(first.new_holdings)) == (104, 104, 104)
    list_pages = sum(
        n for key, n in probe.requests.items() if key == "GET /v1/programmable-endpoints"
    )
    assert list_pages == 2  # 100 + 4: the short second page ends the list
    with runtime.sessions() as session:
        numbers = {
            str(ref): number
            for ref, number in session.execute(
                select(Holding.holding_ref, Locator.account_number).join(
                    Locator, Locator.holding_id == Holding.id
                )
            )
        }
        cursors = session.scalars(select(ActivityCursor.holding_id)).all()
        watched = session.scalars(select(Holding.watched)).all()
    assert numbers == {m["holdingRef"]: m["accountNumber"] for m in made}
    assert internal.holding_ref not in numbers
    assert len(cursors) == 104 and all(watched)
    again = discover(runtime)
    assert (again.listed, again.read, again.new_holdings) == (104, 0, [])


def test_snapshots_store_each_watched_holdings_balance_with_its_time(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    made = build_bulk(sandbox.state, holdings=3, postings=30, seed=4)
    discover(runtime)
    with transaction(runtime.sessions) as session:
        unwatched = session.scalars(
            select(Holding).where(Holding.holding_ref == uuid.UUID(made[2]["holdingRef"]))
        ).one()
        unwatched.watched = False
    before = runtime.clock()
    result = snapshot_watched(runtime)
    after = runtime.clock()
    assert (result.endpoints, result.snapshots, result.failed) == (2, 2, 0)
    with runtime.sessions() as session:
        rows = session.execute(
            select(
                Holding.holding_ref, BalanceSnapshot.settled_minor, BalanceSnapshot.observed_at
            ).join(Holding, Holding.id == BalanceSnapshot.holding_id)
        ).all()
    assert {str(ref): settled for ref, settled, _ in rows} == {
        m["holdingRef"]: sandbox.state.posted_sum(m["holdingRef"]) for m in made[:2]
    }
    assert all(before <= observed <= after for _, _, observed in rows)


def test_subscription_alerts_when_not_active_or_failing_and_resolves_after(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    webhook = runtime.company.register_webhook(
        WebhookRequest(
            url="http://127.0.0.1:9/unreachable",
            event_types=["ACCOUNT_CREATED"],
            secret=SECRET,
        )
    )
    with transaction(runtime.sessions) as session:
        record_webhook(session, webhook, registered_by_recon=True)

    quiet = check_webhooks(runtime)
    assert (quiet.checked, quiet.raised) == (1, [])

    sandbox.state.create_endpoint(
        "customer_balance_collection_child", str(uuid.uuid4()), "business-entity", "NGN"
    )
    deadline = time.monotonic() + 10
    while sandbox.state.webhooks[webhook.webhook_id].failed == 0:
        assert time.monotonic() < deadline, "the sandbox never failed a delivery"
        time.sleep(0.05)
    failing = check_webhooks(runtime)
    assert failing.raised == [f"subscription_failures_rising:{webhook.webhook_id}"]

    with sandbox.state.lock:
        sandbox.state.webhooks[webhook.webhook_id].status = "SUSPENDED"
    suspended = check_webhooks(runtime)
    assert f"subscription_inactive:{webhook.webhook_id}" in suspended.raised

    with sandbox.state.lock:
        hook = sandbox.state.webhooks[webhook.webhook_id]
        hook.status = "ACTIVE"
    wait_for_settled_counters(sandbox, webhook.webhook_id)
    check_webhooks(runtime)
    cleared = check_webhooks(runtime)
    assert cleared.raised == []
    with runtime.sessions() as session:
        alerts = {a.kind: (a.state, a.severity) for a in session.scalars(select(Alert))}
    assert alerts == {
        "subscription_failures_rising": ("resolved", "high"),
        "subscription_inactive": ("resolved", "critical"),
    }


def wait_for_settled_counters(sandbox: SandboxServer, webhook_id: str) -> None:
    """Wait until the sandbox stops retrying: `failed` unchanged for longer than its longest
    retry delay (1.0 s in this suite's schedule), so a later check sees no new failures."""
    deadline = time.monotonic() + 20
    last, since = sandbox.state.webhooks[webhook_id].failed, time.monotonic()
    while time.monotonic() - since < 1.5:
        assert time.monotonic() < deadline, "the sandbox kept failing deliveries"
        time.sleep(0.05)
        now_failed = sandbox.state.webhooks[webhook_id].failed
        if now_failed != last:
            last, since = now_failed, time.monotonic()


def test_a_webhook_gone_from_the_provider_raises_a_critical_alert(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    webhook = runtime.company.register_webhook(
        WebhookRequest(url="http://127.0.0.1:9/x", event_types=["KYC_VERIFIED"], secret=SECRET)
    )
    with transaction(runtime.sessions) as session:
        record_webhook(session, webhook, registered_by_recon=True)
    with sandbox.state.lock:
        del sandbox.state.webhooks[webhook.webhook_id]
    outcome = check_webhooks(runtime)
    assert outcome.raised == [f"subscription_missing:{webhook.webhook_id}"]
    with runtime.sessions() as session:
        alert = session.scalars(select(Alert)).one()
    assert (alert.kind, alert.severity, alert.state) == ("subscription_missing", "critical", "open")
