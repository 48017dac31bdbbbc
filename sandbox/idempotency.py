"""Idempotent intake: one record per Idempotency-Key, holding the material and the first answer.

The same key with the same material is answered from the record (nothing moves twice); the same
key with other material is refused. Keys are scoped to the environment (every API key of the
application shares them) and forgotten after the retention window in docs/decisions.md.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox.envelopes import IDEMPOTENCY_CHANGED, invalid_input
from sandbox.ids import canonical_json, is_uuid


class Intake:
    __slots__ = (
        "created_ms",
        "envelope_ref",
        "intake_ref",
        "material",
        "operation",
        "response",
        "status",
        "subject_ref",
    )

    def __init__(
        self, operation: str, material: str, created_ms: int, intake_ref: str, envelope_ref: str
    ) -> None:
        self.operation = operation
        self.material = material
        self.created_ms = created_ms
        self.intake_ref = intake_ref
        self.envelope_ref = envelope_ref
        self.status = 0
        self.response: dict[str, Any] | None = None
        self.subject_ref: str | None = None  # e.g. the transferRef a replay points at


class IdempotencyStore:
    def __init__(self, retention_ms: int) -> None:
        self._retention_ms = retention_ms
        self._records: dict[str, Intake] = {}

    @staticmethod
    def check_key(raw: str | None) -> str:
        """The header must be present and a UUID (decisions: otherwise 400 InvalidInput)."""
        if raw is None or raw.strip() == "":
            raise invalid_input("The `Idempotency-Key` header is required on every write.")
        if not is_uuid(raw.strip()):
            raise invalid_input("The `Idempotency-Key` header must be a UUID.")
        return raw.strip().lower()

    @staticmethod
    def material_of(operation: str, body: Any) -> str:
        return hashlib.sha256(operation.encode() + b"\n" + canonical_json(body)).hexdigest()

    def lookup(self, key: str, operation: str, body: Any, now_ms: int) -> Intake | None:
        """The earlier intake under ``key`` if the material matches; refuse if it does not."""
        record = self._records.get(key)
        if record is None:
            return None
        if now_ms - record.created_ms > self._retention_ms:
            del self._records[key]
            return None
        if record.material != self.material_of(operation, body):
            raise invalid_input(IDEMPOTENCY_CHANGED)
        return record

    def remember(
        self,
        key: str,
        operation: str,
        body: Any,
        now_ms: int,
        intake_ref: str,
        envelope_ref: str,
    ) -> Intake:
        record = Intake(
            operation, self.material_of(operation, body), now_ms, intake_ref, envelope_ref
        )
        self._records[key] = record
        return record

    def clear(self) -> None:
        self._records.clear()
