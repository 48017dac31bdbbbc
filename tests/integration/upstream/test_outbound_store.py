"""Idempotency-Keys in the store: recorded before sending, reused until closed, one per material."""

from __future__ import annotations

import threading
import uuid

from sqlalchemy.orm import Session, sessionmaker

from reconciliation.transfers.outbound import StoreIdempotencyKeys
from upstream.idempotency import IdempotencyKeys, Outcome, material_fingerprint

MATERIAL = {"amountMinorUnits": "1000", "destination": {"accountRef": str(uuid.uuid4())}}


def test_a_key_is_recorded_before_it_is_used_and_reused_until_completed(
    session_factory: sessionmaker[Session],
) -> None:
    """Invariant 6: the Idempotency-Key is stored before the write is sent and reused until it
    completes."""
    keys = StoreIdempotencyKeys(session_factory)
    assert isinstance(keys, IdempotencyKeys)
    key = keys.key_for("transfer.create", MATERIAL)
    row = keys.find(key)
    assert row is not None and row.state == "pending"
    assert row.material_fingerprint == material_fingerprint(MATERIAL)
    assert row.request_body == MATERIAL
    # A crash here and a rerun: another process (new object, same store) gets the same key.
    again = StoreIdempotencyKeys(session_factory)
    assert again.key_for("transfer.create", dict(reversed(list(MATERIAL.items())))) == key
    again.sent(key)
    row = keys.find(key)
    assert row is not None and row.state == "sent" and row.sent_at is not None
    assert keys.key_for("transfer.create", MATERIAL) == key
    assert keys.key_for("transfer.quote", MATERIAL) != key
    keys.completed(key, Outcome.ACCEPTED, "ref-1", http_status=202)
    row = keys.find(key)
    assert row is not None
    assert (row.state, row.result_ref, row.response_status) == ("done", "ref-1", 202)
    assert row.completed_at is not None
    # A deliberate second, identical request after completion is a new request: new key.
    assert keys.key_for("transfer.create", MATERIAL) != key


def test_a_rejected_key_is_closed_as_failed(session_factory: sessionmaker[Session]) -> None:
    keys = StoreIdempotencyKeys(session_factory)
    key = keys.key_for("endpoint.lifecycle", MATERIAL)
    keys.completed(key, f"{Outcome.REJECTED}:StaleGuard", None, http_status=409)
    row = keys.find(key)
    assert row is not None and row.state == "failed" and row.response_status == 409
    assert keys.key_for("endpoint.lifecycle", MATERIAL) != key


def test_concurrent_askers_for_the_same_material_share_one_key(
    session_factory: sessionmaker[Session],
) -> None:
    keys = StoreIdempotencyKeys(session_factory)
    material = {"n": str(uuid.uuid4())}
    got: list[uuid.UUID] = []
    barrier = threading.Barrier(6)

    def ask() -> None:
        barrier.wait()
        got.append(keys.key_for("transfer.create", material))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and len(set(got)) == 1
