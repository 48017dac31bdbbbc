"""poll_transfers against the sandbox: terminal statuses, backoff, shared work."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from foundation import load_settings
from reconciliation.store.db import transaction
from reconciliation.store.models import Transfer, TransferChange
from reconciliation.transfers.polling import Backoff
from sandbox.bulk import build_bulk
from sandbox.server import SandboxServer
from sandbox.variants import PRESETS
from tests.integration.workers.conftest import fast_sandbox_config
from tests.integration.workers.sandbox_probe import RequestProbe
from upstream.gateway import GatewayClient
from upstream.wire.common import Destination, HoldingAddress, ValueUnit
from upstream.wire.transfers import TransferRequest
from workers import Runtime, build_runtime, release_runtime
from workers.actors.transfers import poll_due_transfers

QUICK = Backoff(first_seconds=0.05, cap_seconds=0.1)
#: A provider with other names after reservation (sandbox/variants.py, status_vocabulary).
ALTERNATE = fast_sandbox_config(
    variant=dataclasses.replace(PRESETS["recon"], status_vocabulary="alternate")
)


def address(ref: dict[str, str]) -> HoldingAddress:
    return HoldingAddress(
        account_ref=uuid.UUID(ref["accountRef"]),
        endpoint_ref=uuid.UUID(ref["endpointRef"]),
        holding_ref=uuid.UUID(ref["holdingRef"]),
    )


def create_transfers(sandbox: SandboxServer, amounts: list[int]) -> list[uuid.UUID]:
    """Transfers between two funded sandbox holdings, made through the real gateway API."""
    source, target = build_bulk(sandbox.state, holdings=2, postings=20, seed=9)
    refs = []
    with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
        for amount in amounts:
            created = gateway.create_transfer(
                TransferRequest(
                    source=address(source),
                    destination=Destination.internal(address(target)),
                    value_unit=ValueUnit.fiat("NGN"),
                    amount_minor_units=amount,
                )
            )
            refs.append(created.transfer_ref)
    return refs


def track(factory: sessionmaker[Session], refs: list[uuid.UUID], due: datetime) -> None:
    with transaction(factory) as session:
        for ref in refs:
            session.add(Transfer(transfer_ref=ref, origin="created", next_poll_at=due))


def poll_until(rt: Runtime, done: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "transfers did not reach a terminal status in time"
        poll_due_transfers(rt, backoff=QUICK)
        time.sleep(0.02)


def all_terminal(factory: sessionmaker[Session]) -> bool:
    with factory() as session:
        return all(session.scalars(select(Transfer.is_terminal)))


def waiting(factory: sessionmaker[Session]) -> set[uuid.UUID]:
    """Transfers the poller has read and the gateway says are not done (whatever the name)."""
    with factory() as session:
        return set(
            session.scalars(
                select(Transfer.transfer_ref).where(
                    Transfer.status.is_not(None), Transfer.is_terminal.is_(False)
                )
            )
        )


def test_transfers_are_polled_until_their_terminal_status(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    # Both reserved transfers are held on the rail until the poller has seen them awaiting
    # finality: a slow first poll must not miss that stage (the test would then depend on time).
    sandbox.state.outcomes.queue_next("hold")
    sandbox.state.outcomes.queue_next("hold")
    settle, fail, denied = create_transfers(sandbox, [100, 200, 10**15])
    track(runtime.sessions, [settle, fail, denied], runtime.clock())
    poll_until(runtime, lambda: waiting(runtime.sessions) == {settle, fail})
    sandbox.state.finalize(str(settle), "settle")
    sandbox.state.finalize(str(fail), "fail")
    poll_until(runtime, lambda: all_terminal(runtime.sessions))
    with runtime.sessions() as session:
        rows = {t.transfer_ref: t for t in session.scalars(select(Transfer))}
        changes: dict[uuid.UUID, list[Any]] = {}
        for ref, stage, status, revision in session.execute(
            select(
                Transfer.transfer_ref,
                TransferChange.stage,
                TransferChange.status,
                TransferChange.revision,
            )
            .join(Transfer, Transfer.id == TransferChange.transfer_id)
            .order_by(TransferChange.id)
        ):
            changes.setdefault(ref, []).append((stage, status, revision))
    # The gateway's own words, stored verbatim; meaning only from isTerminal/isSuccessful.
    with GatewayClient(sandbox.base_url, "ak_test_recon") as gateway:
        said = {ref: gateway.transfer_status(ref).value for ref in (settle, fail)}
    assert (rows[settle].status, rows[settle].is_successful) == (said[settle].status, True)
    assert (rows[fail].status, rows[fail].is_successful) == (said[fail].status, False)
    assert (rows[denied].status, rows[denied].stage) == ("reservation_denied", "ReservationDenied")
    assert all(t.next_poll_at is None and t.terminal_at is not None for t in rows.values())
    # Never a guessed stage: a status the spec does not pair with one leaves the stage empty.
    assert changes[settle][-1] == (None, said[settle].status, said[settle].revision)
    assert changes[fail][-1] == (None, said[fail].status, said[fail].revision)
    assert changes[denied] == [("ReservationDenied", "reservation_denied", 1)]


@pytest.mark.parametrize("sandbox_config", [ALTERNATE])
def test_another_providers_names_are_polled_to_terminal_by_their_flags(
    runtime: Runtime, sandbox: SandboxServer
) -> None:
    """`settled`, `rejected` and a waiting `held`: none of them a name recon was told."""
    for outcome in ("hold", "hold", "hold"):
        sandbox.state.outcomes.queue_next(outcome)
    settle, fail, held = create_transfers(sandbox, [100, 200, 300])
    track(runtime.sessions, [settle, fail, held], runtime.clock())

    def status_of(ref: uuid.UUID) -> str | None:
        with runtime.sessions() as session:
            return session.scalar(select(Transfer.status).where(Transfer.transfer_ref == ref))

    poll_until(runtime, lambda: {status_of(r) for r in (settle, fail, held)} == {"held"})
    sandbox.state.finalize(str(settle), "settle")
    sandbox.state.finalize(str(fail), "fail")
    poll_until(runtime, lambda: waiting(runtime.sessions) == {held})
    with runtime.sessions() as session:
        rows = {t.transfer_ref: t for t in session.scalars(select(Transfer))}
    assert (rows[settle].status, rows[settle].is_terminal, rows[settle].is_successful) == (
        "settled",
        True,
        True,
    )
    assert (rows[fail].status, rows[fail].is_terminal, rows[fail].is_successful) == (
        "rejected",
        True,
        False,
    )
    # Still held: not terminal, so it stays due and is polled again.
    assert (rows[held].status, rows[held].is_terminal) == ("held", False)
    assert rows[held].next_poll_at is not None and rows[held].stage is None


class SteppedClock:
    """A clock the test moves; the store and the poller read it, nothing sleeps."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def test_backoff_grows_while_awaiting_finality_and_stops_at_terminal(
    worker_env: dict[str, str], sandbox: SandboxServer, probe: RequestProbe
) -> None:
    sandbox.state.config.transfer_finality_delay_seconds = 3600
    [ref] = create_transfers(sandbox, [300])
    clock = SteppedClock(datetime(2030, 1, 1, tzinfo=UTC))
    configured = load_settings(
        {
            **worker_env,
            "RECON_TRANSFER_BACKOFF_FIRST_SECONDS": "2",
            "RECON_TRANSFER_BACKOFF_CAP_SECONDS": "16",
        }
    )
    rt = build_runtime(configured, clock=clock)
    try:
        track(rt.sessions, [ref], clock.now)
        polled_at: list[float] = []
        start = clock.now
        for _ in range(80):  # 40 simulated seconds in half-second steps
            before = probe.count("GET /v1/transfers/")
            poll_due_transfers(rt)  # the configured backoff
            if probe.count("GET /v1/transfers/") > before:
                polled_at.append((clock.now - start).total_seconds())
            clock.now += timedelta(seconds=0.5)
        assert polled_at == [0, 2, 6, 14, 30]
        sandbox.state.finalize(str(ref), "settle")
        clock.now += timedelta(seconds=16)
        poll_due_transfers(rt)  # the configured backoff
        calls = probe.count("GET /v1/transfers/")
        clock.now += timedelta(hours=1)
        poll_due_transfers(rt)  # the configured backoff
        assert probe.count("GET /v1/transfers/") == calls  # terminal: never polled again
        assert all_terminal(rt.sessions)
    finally:
        release_runtime(rt)


def test_workers_share_due_transfers_without_polling_one_twice(
    runtime: Runtime, sandbox: SandboxServer, probe: RequestProbe
) -> None:
    sandbox.state.config.transfer_finality_delay_seconds = 3600
    refs = create_transfers(sandbox, [10 + i for i in range(30)])
    track(runtime.sessions, refs, runtime.clock())
    slow = Backoff(first_seconds=3600, cap_seconds=3600)
    results = []
    lock = threading.Lock()

    def worker() -> None:
        result = poll_due_transfers(runtime, backoff=slow, batch=3)
        with lock:
            results.append(result.polled)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 30
    assert probe.count("GET /v1/transfers/") == 30
    with runtime.sessions() as session:
        attempts = session.scalars(select(Transfer.poll_attempts)).all()
    assert sorted(attempts) == [1] * 30
