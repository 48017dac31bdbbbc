"""Idempotent intake: one record per Idempotency-Key, holding the material and the first answer.

The same key with the same material is answered from the record (nothing moves twice); the same
key with other material is refused. How a replay is answered is a provider choice the spec shows
only for transfer create (`body.replay`): `ProviderVariant.write_replay` says whether every other
write answers the same way (`every-write`) or repeats its first answer (`transfer-only`). Keys are scoped to the environment (every API key of the
application shares them) and forgotten after the retention window in docs/decisions.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
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


#: A replay answer: (HTTP status, response content) for a repeated key with equal material.
ReplayAnswer = Callable[[Intake], tuple[int, dict[str, Any]]]

#: What a replay record calls its one reference, per write (transfer create's is the spec's).
SUBJECT_MEMBERS: dict[str, str] = {
    "POST /v1/transfers": "transferRef",
    "POST /v1/programmable-endpoints": "endpointRef",
    "POST /v1/programmable-endpoints/{endpointRef}/lifecycle": "endpointRef",
    "POST /v1/receiving-endpoints": "endpointRef",
    "POST /v1/sandbox/inbound-credits": "simulationRef",
}


def replay_record(intake: Intake, subject_member: str) -> dict[str, Any]:
    """The spec's replay record: which intake took the request in, and what it made."""
    return {
        "intakeRef": f"operation-ingress-intake:{intake.intake_ref}",
        "envelopeRef": intake.envelope_ref,
        "occurrence": "ReplayAccepted",
        subject_member: intake.subject_ref,
    }


def replay_body(intake: Intake, status: int, subject_member: str) -> tuple[int, dict[str, Any]]:
    """A replay answered with `body.replay` and no receipts, as the spec shows for transfers."""
    record = replay_record(intake, subject_member)
    return status, {"status": status, "body": {"replay": record}, "evidence": []}


def replay_for(write_replay: str, route_key: str, first_answer: ReplayAnswer) -> ReplayAnswer:
    """How this provider answers a replay of the write `route_key` (see the module docstring).

    Under `every-write` the replay record keeps the first answer's HTTP status.
    """
    if write_replay != "every-write":
        return first_answer
    member = SUBJECT_MEMBERS[route_key]
    return lambda intake: replay_body(intake, intake.status, member)
