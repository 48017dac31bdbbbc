"""A write answered as a replay: the gateway had already taken this Idempotency-Key in.

The spec shows one replay shape, for transfer create: `body.replay` = `{intakeRef, envelopeRef,
occurrence, transferRef}` instead of the transfer. Whether the other writes (programmable
endpoint create, lifecycle, receiving endpoint create, the sandbox inbound credit) answer a
replay the same way or repeat their first answer is not shown, so every write accepts both. A
replay record says that the earlier request was taken in, not what the object looks like now:
`WriteReplayed` is an outcome the caller acts on (typically by reading the object again), never
a half-filled copy of the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from uuid import UUID

import msgspec

from foundation import uuid_from_text
from upstream.wire.evidence import Evidence

#: The member of a success body that holds a replay record (the spec's, for transfers).
REPLAY_MEMBER: Final = "replay"

#: Where a replay record may name what the first request made, per write, best guess first.
#: Only `transferRef` is shown (transfer create); the others are the names the objects
#: themselves use, and a record naming none of them still settles the key.
SUBJECT_MEMBERS: Final[dict[str, tuple[str, ...]]] = {
    "transfer.create": ("transferRef",),
    "endpoint.create": ("endpointRef",),
    "endpoint.lifecycle": ("endpointRef",),
    "receiving.create": ("endpointRef", "activationRef"),
    "sandbox.inbound_credit": ("simulationRef",),
}


class WriteReplayed(msgspec.Struct, frozen=True, kw_only=True):
    """A write the gateway answered with a replay record: nothing was done twice.

    `subject_ref` is what the first request made or changed when the record names it (an
    endpoint, a simulation), else None: read the object again to see its current state.
    """

    operation: str
    idempotency_key: UUID
    http_status: int
    subject_ref: UUID | None
    intake_ref: str | None
    envelope_ref: UUID | None
    occurrence: str | None
    evidence: tuple[Evidence, ...]


def _lenient_ref(value: object) -> UUID | None:
    """A reference if the member is a UUID; the record is a hint, so a bad one is just absent."""
    try:
        return uuid_from_text(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_write_replay(
    record: Mapping[str, object],
    *,
    operation: str,
    idempotency_key: UUID,
    http_status: int,
    evidence: tuple[Evidence, ...],
) -> WriteReplayed:
    """Read a `replay` record leniently: any member may be missing or shaped differently."""
    subject = next(
        (r for name in SUBJECT_MEMBERS.get(operation, ()) if (r := _lenient_ref(record.get(name)))),
        None,
    )
    return WriteReplayed(
        operation=operation,
        idempotency_key=idempotency_key,
        http_status=http_status,
        subject_ref=subject,
        intake_ref=_text(record.get("intakeRef")),
        envelope_ref=_lenient_ref(record.get("envelopeRef")),
        occurrence=_text(record.get("occurrence")),
        evidence=evidence,
    )
