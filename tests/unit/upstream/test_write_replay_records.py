"""Reading a replay record leniently: whatever a provider puts in it, the outcome is typed."""

from __future__ import annotations

import uuid

import pytest

from upstream.wire.replays import parse_write_replay

KEY = uuid.uuid4()


def read(record: dict[str, object], operation: str = "endpoint.create") -> object:
    return parse_write_replay(
        record,
        operation=operation,
        idempotency_key=KEY,
        http_status=200,
        evidence=(),
    )


def test_the_spec_shape_names_what_was_made() -> None:
    made = uuid.uuid4()
    replay = read(
        {
            "intakeRef": "operation-ingress-intake:x",
            "envelopeRef": str(uuid.uuid4()),
            "occurrence": "ReplayAccepted",
            "endpointRef": str(made),
        }
    )
    assert replay.subject_ref == made
    assert replay.occurrence == "ReplayAccepted"


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"endpointRef": "not-a-uuid", "envelopeRef": 7},
        {"intakeRef": 12, "occurrence": None, "somethingElseRef": str(uuid.uuid4())},
    ],
)
def test_a_record_naming_nothing_usable_is_still_a_replay(record: dict[str, object]) -> None:
    replay = read(record)
    assert replay.subject_ref is None and replay.idempotency_key == KEY


def test_each_write_looks_for_its_own_reference() -> None:
    sim = uuid.uuid4()
    assert read({"simulationRef": str(sim)}, "sandbox.inbound_credit").subject_ref == sim
    assert read({"simulationRef": str(sim)}, "endpoint.create").subject_ref is None
    act = uuid.uuid4()
    assert read({"activationRef": str(act)}, "receiving.create").subject_ref == act
