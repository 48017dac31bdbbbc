"""The embedded runner's handle, the dispatch entry point, and the process commands' refusals."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from foundation import Settings
from recon.cli.main import cli
from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.models import Notification
from reconciliation.store.types import utcnow
from workers import start_embedded
from workers.dispatch import enqueue_process_delivery


def delivery_body(event_id: str) -> bytes:
    return json.dumps(
        {
            "id": event_id,
            "event": "PAYMENT_RECEIVED",
            "createdAt": "2026-11-22T03:00:00.000Z",
            "data": {
                "transferRef": None,
                "receiptRef": str(uuid.uuid4()),
                "accountRef": str(uuid.uuid4()),
                "endpointRef": str(uuid.uuid4()),
                "holdingRef": str(uuid.uuid4()),
                "accountNumber": "0123456789",
                "bankCode": "000",
                "amount": "10.00",
                "currency": "NGN",
                "status": "SUCCESSFUL",
                "narration": "x",
            },
        }
    ).encode()


def test_dispatched_deliveries_are_processed_by_the_embedded_workers(
    worker_settings: Settings,
) -> None:
    embedded = start_embedded(worker_settings, with_scheduler=False)
    try:
        sessions = embedded.running.runtime.sessions
        with transaction(sessions) as session:
            recorded = record_deliveries(
                session.connection(),
                [
                    InboundDelivery(
                        delivery_id=f"evt-{i}",
                        body=delivery_body(f"evt-{i}"),
                        headers={},
                        scheme="standard",
                        event_type=None,
                        received_at=utcnow(),
                    )
                    for i in range(250)
                ],
            )
        enqueue_process_delivery([r.row_id for r in recorded if r.row_id is not None])
        # Not join_idle: the deliveries name holdings nobody has, so discovery is asked for
        # and, inside the ask interval, deferred to its end (a delayed message, still queued).
        deadline = time.monotonic() + 30
        while True:
            with sessions() as session:
                amounts = session.scalars(select(Notification.amount_minor)).all()
            if len(amounts) == 250 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        embedded.stop()
    assert amounts == [1000] * 250


def test_the_worker_refuses_a_page_size_the_gateway_would_refuse(
    worker_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**worker_env, "RECON_ACTIVITY_PAGE_SIZE": "500"}.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(cli, ["worker"])
    assert result.exit_code == 2
    assert "RECON_ACTIVITY_PAGE_SIZE=500 is not valid" in result.output


def test_the_scheduler_alone_needs_redis(
    worker_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in worker_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("REDIS_URL", raising=False)
    result = CliRunner().invoke(cli, ["scheduler"])
    assert result.exit_code == 2
    assert "REDIS_URL is unset" in result.output
