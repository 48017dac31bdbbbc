"""Where gateway writes get their Idempotency-Key: a durable record written before sending.

upstream knows nothing of the store, so it asks through the `IdempotencyKeys` protocol. The
store-backed implementation lives in `reconciliation/transfers/outbound.py`; `MemoryIdempotencyKeys` here
serves tests, benchmarks and one-off scripts.

The contract: `key_for` returns the key already recorded for this exact operation and material
if that request was never completed (so a retry after a crash reuses it, and the gateway
replays instead of moving money twice), otherwise records a new key durably and returns it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from uuid import UUID


class Outcome:
    """Outcome words passed to `IdempotencyKeys.completed`."""

    ACCEPTED = "accepted"
    DENIED = "denied"
    REPLAYED = "replayed"
    CREATED = "created"
    APPLIED = "applied"
    REJECTED = "rejected"

    @staticmethod
    def is_failure(outcome: str) -> bool:
        """True when the gateway refused the request for good (a new request needs a new key)."""
        return outcome.startswith(Outcome.REJECTED)


@runtime_checkable
class IdempotencyKeys(Protocol):
    """Durable Idempotency-Keys for gateway writes."""

    def key_for(self, operation: str, material: Mapping[str, object]) -> UUID:
        """The open key for this operation and material, or a new one recorded before return."""
        ...

    def sent(self, key: UUID) -> None:
        """Note that a request under `key` is about to go out (it may reach the gateway)."""
        ...

    def completed(
        self,
        key: UUID,
        outcome: str,
        result_ref: str | None,
        *,
        http_status: int | None = None,
    ) -> None:
        """Close `key`: the gateway answered for good. A later identical request gets a new key."""
        ...


def canonical_json(material: Mapping[str, object]) -> bytes:
    """Material as canonical JSON: sorted keys, no spaces, UTF-8; UUIDs and the like as str."""
    return json.dumps(
        material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode("utf-8")


def material_fingerprint(material: Mapping[str, object]) -> str:
    """sha256 hex of the canonical JSON of the material: equal material, equal fingerprint."""
    return hashlib.sha256(canonical_json(material)).hexdigest()


@dataclass(slots=True)
class _Entry:
    key: UUID
    operation: str
    fingerprint: str
    state: str = "pending"
    outcome: str | None = None
    result_ref: str | None = None
    http_status: int | None = None


class MemoryIdempotencyKeys:
    """In-process keys: correct within one process, forgotten when it exits. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], UUID] = {}
        self.entries: dict[UUID, _Entry] = {}

    def key_for(self, operation: str, material: Mapping[str, object]) -> UUID:
        """The open key for this material, or a new one."""
        fingerprint = material_fingerprint(material)
        with self._lock:
            existing = self._open.get((operation, fingerprint))
            if existing is not None:
                return existing
            key = uuid.uuid4()
            self._open[(operation, fingerprint)] = key
            self.entries[key] = _Entry(key=key, operation=operation, fingerprint=fingerprint)
            return key

    def sent(self, key: UUID) -> None:
        """Mark sent."""
        with self._lock:
            entry = self.entries.get(key)
            if entry is not None and entry.state == "pending":
                entry.state = "sent"

    def completed(
        self,
        key: UUID,
        outcome: str,
        result_ref: str | None,
        *,
        http_status: int | None = None,
    ) -> None:
        """Close the key."""
        with self._lock:
            entry = self.entries.get(key)
            if entry is None:
                return
            entry.state = "failed" if Outcome.is_failure(outcome) else "done"
            entry.outcome = outcome
            entry.result_ref = result_ref
            entry.http_status = http_status
            self._open.pop((entry.operation, entry.fingerprint), None)
