"""The receiver on both databases: acknowledged means committed; every refusal has its status.

Runs the real app (lifespan, writer thread, relay) through Litestar's TestClient over a real
SQLite file and a real PostgreSQL database.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
import structlog
from litestar.testing import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks.webhooks import Webhook as OfficialWebhook

from app import metrics
from app.signing_keys import FORCED_REFRESH_MIN_SECONDS
from foundation import Secret, SecretBox, Settings, load_settings
from reconciliation.notifications.inbox import BODY_CONFLICT_ALERT, body_conflict_fingerprint
from reconciliation.notifications.subscriptions import store_secret
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert
from tests.clocks import ManualClock
from tests.integration.app.receiver_helpers import (
    PATH,
    SECRET,
    event_body,
    signed_headers,
    stored,
    wait_for,
)


def outcome_count(outcome: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "recon_webhook_deliveries_total", {"outcome": outcome}
    )
    return value or 0.0


def barrier(
    client: TestClient[object], enqueued: list[int], factory: sessionmaker[Session]
) -> None:
    """Send one more delivery and wait until it is enqueued: everything before it was too.

    The relay sends ids in commit order, so this is how a test proves that something was *not*
    enqueued without sleeping.
    """
    body = event_body("ACCOUNT_CREATED")
    assert client.post(PATH, content=body, headers=signed_headers(body)).status_code == 200
    last = stored(factory)[-1].id
    wait_for(lambda: last in enqueued, what="the barrier delivery to be enqueued")


def test_signed_delivery_is_stored_exactly_then_acknowledged_then_enqueued(
    client: TestClient[object], factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    """Invariant 1: the 200 comes after the delivery's exact bytes are in the store, and only then
    is it handed to the workers."""
    body = event_body("PAYMENT_RECEIVED")
    headers = signed_headers(body, delivery_id="msg_exact")
    response = client.post(PATH, content=body, headers={**headers, "X-Request-Id": "trace-1"})
    assert response.status_code == 200
    assert response.json() == {"outcome": "accepted"}
    [row] = stored(factory)
    assert row.body == body
    assert (row.delivery_id, row.state, row.event_type, row.scheme) == (
        "msg_exact",
        "pending",
        "PAYMENT_RECEIVED",
        "standard",
    )
    assert row.headers["webhook-signature"] == headers["webhook-signature"]
    assert row.headers["webhook-timestamp"] == headers["webhook-timestamp"]
    wait_for(lambda: enqueued == [row.id], what="the row id to be enqueued")
    assert response.headers["x-request-id"] == "trace-1"


def test_delivery_signed_by_the_official_package_is_accepted(
    client: TestClient[object], factory: sessionmaker[Session]
) -> None:
    body = event_body("TRANSACTION_COMPLETED")
    now = datetime.now(UTC)
    signature = OfficialWebhook(SECRET).sign("msg_official", now, body.decode())
    headers = {
        "content-type": "application/json",
        "webhook-id": "msg_official",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }
    assert client.post(PATH, content=body, headers=headers).status_code == 200
    assert [r.delivery_id for r in stored(factory)] == ["msg_official"]


def test_repeated_delivery_is_acknowledged_and_processed_once(
    client: TestClient[object], factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    """Invariant 2: a retried delivery id is recognised from the store and acknowledged without a
    second row."""
    body = event_body()
    sent_at = int(time.time())
    first = client.post(
        PATH, content=body, headers=signed_headers(body, delivery_id="msg_twice", timestamp=sent_at)
    )
    # A provider retry: same id and body, a new timestamp and signature.
    again = client.post(
        PATH,
        content=body,
        headers=signed_headers(body, delivery_id="msg_twice", timestamp=sent_at + 1),
    )
    assert (first.status_code, first.json()) == (200, {"outcome": "accepted"})
    assert (again.status_code, again.json()) == (200, {"outcome": "duplicate"})
    barrier(client, enqueued, factory)
    rows = stored(factory)
    assert [r.delivery_id for r in rows].count("msg_twice") == 1
    assert enqueued == [rows[0].id, rows[1].id]


def test_same_id_with_a_different_body_is_kept_quarantined_and_alerted(
    client: TestClient[object], factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    """Invariant 2: an id seen before with another body is kept aside and alerted, never taken for
    the first."""
    original = event_body(event_id="evt_1", amount="10.00")
    altered = event_body(event_id="evt_1", amount="10.01")
    for body in (original, altered):
        response = client.post(
            PATH, content=body, headers=signed_headers(body, delivery_id="msg_c")
        )
        assert response.status_code == 200
    assert response.json() == {"outcome": "conflict"}
    barrier(client, enqueued, factory)
    first, second, _barrier = stored(factory)
    assert (first.state, first.body) == ("pending", original)
    assert (second.state, second.body) == ("quarantined", altered)
    assert (second.error or "").startswith("delivery id re-sent with a different body: ")
    assert "recon deliveries choose" in (second.error or "")
    assert second.id not in enqueued
    with factory() as session:
        alert = session.scalars(select(Alert)).one()
    assert alert.kind == BODY_CONFLICT_ALERT
    assert alert.fingerprint == body_conflict_fingerprint("msg_c")
    assert alert.evidence["quarantined_row_id"] == second.id
    assert alert.evidence["earlier_rows"][0]["row_id"] == first.id


def test_malformed_json_behind_a_valid_signature_is_acknowledged_and_quarantined(
    client: TestClient[object], factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    body = b'{"id": "evt_broken", "event": "PAYMENT_RECEIVED", "data": {'
    before = outcome_count("quarantined")
    response = client.post(PATH, content=body, headers=signed_headers(body))
    assert (response.status_code, response.json()) == (200, {"outcome": "quarantined"})
    barrier(client, enqueued, factory)
    row = stored(factory)[0]
    assert (row.state, row.body) == ("quarantined", body)
    assert row.error is not None
    assert row.error.startswith("body is not valid JSON")
    assert row.id not in enqueued
    assert outcome_count("quarantined") == before + 1


def refused(
    client: TestClient[object], body: bytes, headers: dict[str, str], status: int, outcome: str
) -> str:
    """Post, check the status, the outcome and its counter; return the detail."""
    before = outcome_count(outcome)
    response = client.post(PATH, content=body, headers=headers)
    assert response.status_code == status, response.text
    assert response.json()["error"] == outcome
    assert outcome_count(outcome) == before + 1
    detail: str = response.json()["detail"]
    return detail


def test_bad_signature_is_refused_and_nothing_stored(
    client: TestClient[object], factory: sessionmaker[Session]
) -> None:
    """Invariant 1: a body whose signature does not verify is refused before it is read, and nothing
    of it is stored."""
    body = event_body()
    headers = signed_headers(body, secret="whsec_" + "A" * 43 + "=")
    detail = refused(client, body, headers, 401, "bad_signature")
    assert "no v1 signature matches an accepted secret" in detail
    tampered = signed_headers(body)
    refused(client, body.replace(b"1500.50", b"1500.51"), tampered, 401, "bad_signature")
    assert stored(factory) == []


def test_missing_signature_is_refused(client: TestClient[object]) -> None:
    body = event_body()
    detail = refused(client, body, {"content-type": "application/json"}, 401, "bad_signature")
    assert "missing webhook-id, webhook-timestamp, webhook-signature header(s)" in detail


@pytest.mark.parametrize(("skew", "direction"), [(-400, "in the past"), (400, "in the future")])
def test_timestamp_outside_tolerance_is_refused_with_the_reason(
    client: TestClient[object], factory: sessionmaker[Session], skew: int, direction: str
) -> None:
    body = event_body()
    headers = signed_headers(body, timestamp=int(time.time()) + skew)
    detail = refused(client, body, headers, 401, "stale_timestamp")
    assert direction in detail
    assert "outside the tolerance of 300 s" in detail
    assert stored(factory) == []


def test_tolerance_is_configurable(
    make_client: Callable[..., TestClient[object]], recon_env: dict[str, str]
) -> None:
    settings = load_settings({**recon_env, "RECON_SIGNATURE_TOLERANCE_SECONDS": "30"})
    client = make_client(settings)
    body = event_body()
    headers = signed_headers(body, timestamp=int(time.time()) - 60)
    assert "tolerance of 30 s" in refused(client, body, headers, 401, "stale_timestamp")


def test_body_over_the_limit_is_refused(
    make_client: Callable[..., TestClient[object]],
    recon_env: dict[str, str],
) -> None:
    settings = load_settings({**recon_env, "RECON_WEBHOOK_BODY_LIMIT_BYTES": "1024"})
    client = make_client(settings)
    body = event_body(narration="x" * 2000)
    detail = refused(client, body, signed_headers(body), 413, "too_large")
    assert "limit of 1024 bytes" in detail

    def chunks() -> Iterator[bytes]:
        # No Content-Length: the limit must hold while reading, not only when declared.
        for _ in range(20):
            yield b"x" * 100

    headers = signed_headers(b"x" * 2000)
    refused(client, chunks(), headers, 413, "too_large")  # type: ignore[arg-type]


def test_body_at_the_limit_is_accepted(
    make_client: Callable[..., TestClient[object]], recon_env: dict[str, str]
) -> None:
    body = event_body()
    settings = load_settings({**recon_env, "RECON_WEBHOOK_BODY_LIMIT_BYTES": str(len(body))})
    client = make_client(settings)
    assert client.post(PATH, content=body, headers=signed_headers(body)).status_code == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_content_type_is_refused(
    client: TestClient[object], content_type: str | None
) -> None:
    body = event_body()
    headers = signed_headers(body)
    if content_type is None:
        del headers["content-type"]
    else:
        headers["content-type"] = content_type
    detail = refused(client, body, headers, 415, "bad_content_type")
    assert "send application/json" in detail


def test_json_with_charset_parameter_is_accepted(client: TestClient[object]) -> None:
    body = event_body()
    headers = {**signed_headers(body), "content-type": "application/json; charset=utf-8"}
    assert client.post(PATH, content=body, headers=headers).status_code == 200


def test_only_post_is_accepted(client: TestClient[object]) -> None:
    response = client.get(PATH)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_refusals_are_logged_without_body_or_secret(client: TestClient[object]) -> None:
    """Invariant 8: a refused delivery is logged without its body or the webhook secret."""
    body = event_body(narration="very-private-narration")
    with structlog.testing.capture_logs() as logs:
        client.post(
            PATH, content=body, headers=signed_headers(body, secret="whsec_" + "B" * 43 + "=")
        )
        client.post(PATH, content=body, headers={"content-type": "text/plain"})
    refusals = [e for e in logs if e["event"] == "webhook.refused"]
    assert [e["outcome"] for e in refusals] == ["bad_signature", "bad_content_type"]
    assert all(e["remote"] and e["reason"] for e in refusals)
    text = json.dumps(logs, default=str)
    for leaked in ("very-private-narration", SECRET, SECRET[6:], "B" * 43):
        assert leaked not in text


def test_secret_stored_by_another_process_is_accepted_at_once(
    make_client: Callable[..., TestClient[object]], settings: Settings
) -> None:
    """A rotation done elsewhere must not cost the first delivery signed with the new secret."""
    monotonic = ManualClock()
    client = make_client(settings, monotonic=monotonic)
    factory: sessionmaker[Session] = client.app.state["session_factory"]
    fresh = "whsec_" + "Zm9yLXRoZS1uZXctc2VjcmV0LW9mLXJvdGF0aW9uLTMy"
    with transaction(factory) as session:
        store_secret(session, SecretBox(settings.store.secret_keys), Secret(fresh))
    # Past the forced reload's pace, counted from the app's start-up load.
    monotonic.advance(FORCED_REFRESH_MIN_SECONDS)
    body = event_body()
    response = client.post(PATH, content=body, headers=signed_headers(body, secret=fresh))
    assert response.status_code == 200


def test_enqueue_failure_never_turns_a_commit_into_a_refusal(
    make_client: Callable[..., TestClient[object]], settings: Settings
) -> None:
    def broken(row_ids: object) -> None:
        raise ConnectionError("broker down")

    client = make_client(settings, enqueue=broken)
    before = metrics.REGISTRY.get_sample_value("recon_webhook_enqueue_failures_total") or 0.0
    body = event_body()
    assert client.post(PATH, content=body, headers=signed_headers(body)).status_code == 200
    wait_for(
        lambda: (
            (metrics.REGISTRY.get_sample_value("recon_webhook_enqueue_failures_total") or 0)
            > before
        ),
        what="the enqueue failure to be counted",
    )
    factory: sessionmaker[Session] = client.app.state["session_factory"]
    assert [r.state for r in stored(factory)] == ["pending"]


def test_a_concurrent_burst_is_committed_in_batches_each_delivery_once(
    client: TestClient[object], factory: sessionmaker[Session]
) -> None:
    """Forty deliveries sent at once by twenty senders, ten of them a second copy racing its
    first: all acknowledged, each id stored once, and the group commit took several a batch."""
    ids = [str(uuid.uuid4()) for _ in range(30)]
    sends = [(i, event_body(event_id=i)) for i in ids + ids[:10]]
    commits_before = _commits()
    together = threading.Barrier(20)  # each twenty sends leave at once

    def send(sent: tuple[str, bytes]) -> tuple[int, str]:
        delivery_id, body = sent
        headers = signed_headers(body, delivery_id=delivery_id)
        together.wait(timeout=60)
        response = client.post(PATH, content=body, headers=headers)
        return response.status_code, response.json()["outcome"]

    with ThreadPoolExecutor(max_workers=20) as senders:
        answers = list(senders.map(send, sends))
    assert {status for status, _ in answers} == {200}
    assert sorted(outcome for _, outcome in answers) == ["accepted"] * 30 + ["duplicate"] * 10
    assert sorted(r.delivery_id for r in stored(factory)) == sorted(ids)
    assert _commits() - commits_before < 20, "the deliveries were not committed in batches"


def _commits() -> float:
    """The receiver's commits so far (its batch-size histogram's count)."""
    return metrics.REGISTRY.get_sample_value("recon_webhook_commit_batch_size_count") or 0.0


def test_an_unexpected_error_is_a_500_never_a_2xx(
    client: TestClient[object], factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Invariant 1: The receiver is dispatched ahead of Litestar's error handling, so it answers for itself.

    A bug is stood in for by a writer that raises something no path expects; the provider must
    hear a 5xx (it retries) and the rest of the app must keep working.
    """
    from app.receiver.group_commit import GroupCommitWriter

    async def broken(self: GroupCommitWriter, delivery: object) -> object:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(GroupCommitWriter, "write", broken)
    body = event_body("PAYMENT_RECEIVED")
    response = client.post(PATH, content=body, headers=signed_headers(body))
    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"
    assert "a bug" not in response.text
    assert stored(factory) == []
    assert client.get("/health").status_code == 200
