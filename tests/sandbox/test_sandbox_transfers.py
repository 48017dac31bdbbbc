"""Gateway: POST /v1/transfers, POST /v1/transfers/quote, GET /v1/transfers/{ref}/status,
the transfer states of section 3, and the life cycle after reservation in docs/decisions.md."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from sandbox import config as c
from sandbox.variants import PRESETS
from tests.sandbox.sandbox_helpers import (
    AUTH,
    World,
    is_ts,
    is_uuid,
    new_key,
    playing,
    problem,
    read_value,
    success_body,
    write_headers,
)

TRANSFER_FIELDS = {
    "transferRef",
    "requestedAt",
    "decidedAt",
    "stage",
    "revision",
    "sourceAccountRef",
    "sourceEndpointRef",
    "sourceHoldingRef",
    "destination",
    "valueUnit",
    "amountMinorUnits",
    "requestedBy",
    "materialFingerprint",
}
STATUS_FIELDS = {
    "transferRef",
    "status",
    "isTerminal",
    "isSuccessful",
    "reason",
    "revision",
    "fees",
}
NO_FEES = {"status": "not_required", "reason": "no_configured_fee", "totals": [], "lines": []}


@pytest.fixture
def recon_world(world: World) -> Iterator[World]:
    """Our first guesses (`recon`): for assertions on the names only that preset uses."""
    with playing(world, PRESETS["recon"]) as pinned:
        yield pinned


@pytest.fixture
def alternate_world(world: World) -> Iterator[World]:
    """Other plausible names after reservation, and every write replayed with `body.replay`."""
    with playing(world, PRESETS["standard"]) as pinned:
        yield pinned


def status_of(world: World, ref: str) -> dict[str, object]:
    value = read_value(world.client.get(f"/v1/transfers/{ref}/status", headers=AUTH))
    assert set(value) == STATUS_FIELDS
    assert value["fees"] == NO_FEES
    return value


def test_reservation_is_202_principal_reserved_revision_2(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint("customer_balance_internal")
    body = world.transfer_body(src, dst, 2_500)
    r = world.client.post("/v1/transfers", json=body, headers=write_headers())
    outer = success_body(r, 202)
    assert set(outer) == {"transfer"}
    j = r.json()
    from tests.sandbox.sandbox_helpers import check_read_shape

    t = check_read_shape(outer["transfer"], "EngineRuntime")
    assert set(t) == TRANSFER_FIELDS
    assert t["stage"] == "PrincipalReserved" and t["revision"] == 2
    assert is_uuid(t["transferRef"]) and is_ts(t["requestedAt"]) and is_ts(t["decidedAt"])
    assert (t["sourceAccountRef"], t["sourceEndpointRef"], t["sourceHoldingRef"]) == (
        src["accountRef"],
        src["endpointRef"],
        src["holdingRef"],
    )
    assert t["destination"] == body["destination"]
    assert t["valueUnit"] == body["valueUnit"] and t["amountMinorUnits"] == "2500"
    assert re.fullmatch(r"fp:transfer-initiation-material:[0-9a-f]{64}", t["materialFingerprint"])
    assert t["requestedBy"] == j["evidence"][0]["receiptRef"]
    # the reservation shows in the snapshot at once
    bal = world.balance(src)
    assert bal["activeReservedMinorUnits"] == "2500"
    assert bal["availableMinorUnits"] == "7500" and bal["settledMinorUnits"] == "10000"
    assert len(bal["activeReservationRefs"]) == 1
    # and the status read is the non-terminal wait
    s = status_of(world, t["transferRef"])
    assert (s["status"], s["reason"], s["isTerminal"], s["isSuccessful"], s["revision"]) == (
        "awaiting_finality",
        "finality_missing",
        False,
        False,
        2,
    )


def test_insufficient_balance_is_200_reservation_denied_revision_1(world: World) -> None:
    src, dst = world.funded(1_000), world.endpoint()
    r = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 1_001), headers=write_headers()
    )
    body = success_body(r, 200)
    t = body["transfer"]["value"]
    assert set(t) == TRANSFER_FIELDS | {"denialReason"}
    assert (t["stage"], t["revision"], t["denialReason"]) == (
        "ReservationDenied",
        1,
        "InsufficientAvailableBalance",
    )
    s = status_of(world, t["transferRef"])
    assert (s["status"], s["reason"], s["isTerminal"], s["isSuccessful"], s["revision"]) == (
        "reservation_denied",
        "reservation_denied",
        True,
        False,
        1,
    )
    assert world.balance(src)["activeReservedMinorUnits"] == "0"
    world.advance(60)
    assert world.state.transfers[t["transferRef"]].stage == "ReservationDenied"


def test_reservations_count_against_available(world: World) -> None:
    src, dst = world.funded(1_000), world.endpoint()
    first = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 600), headers=write_headers()
    )
    assert first.status_code == 202
    second = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 600), headers=write_headers()
    )
    assert second.status_code == 200
    assert second.json()["body"]["transfer"]["value"]["stage"] == "ReservationDenied"


def test_settlement_posts_two_legs_and_releases_the_reservation(recon_world: World) -> None:
    world = recon_world
    src, dst = world.funded(10_000), world.endpoint("customer_balance_internal")
    r = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 2_500), headers=write_headers()
    )
    ref = r.json()["body"]["transfer"]["value"]["transferRef"]
    world.advance(1.0)
    assert status_of(world, ref)["status"] == "awaiting_finality"
    world.advance(1.0)  # finality delay 2 s
    s = status_of(world, ref)
    assert (s["status"], s["reason"], s["isTerminal"], s["isSuccessful"], s["revision"]) == (
        "completed",
        "finality_confirmed",
        True,
        True,
        3,
    )
    debit = world.state.postings(src["holdingRef"])[-1]
    credit = world.state.postings(dst["holdingRef"])[-1]
    assert (debit["postingSide"], debit["balanceEffect"]) == ("debit", "decrease")
    assert (credit["postingSide"], credit["balanceEffect"]) == ("credit", "increase")
    assert debit["journalRef"] == credit["journalRef"]
    assert debit["receiptRef"] == credit["receiptRef"]
    assert debit["lineRef"] != credit["lineRef"]
    assert debit["journalKind"] == credit["journalKind"] == "transfer_settlement"
    assert debit["amountMinorUnits"] == credit["amountMinorUnits"] == "2500"
    world.advance(0.5)  # projection lag
    assert world.balance(src)["settledMinorUnits"] == "7500"
    assert world.balance(src)["activeReservedMinorUnits"] == "0"
    assert world.balance(src)["activeReservationRefs"] == []
    assert world.balance(dst)["settledMinorUnits"] == "2500"


@pytest.mark.parametrize("how", ["queued", "fixed", "now"])
def test_failure_releases_the_reservation_and_posts_nothing(recon_world: World, how: str) -> None:
    world = recon_world
    src, dst = world.funded(10_000), world.endpoint()
    if how == "queued":
        world.client.post("/_sandbox/transfers/outcomes", json={"outcome": "fail"})
    r = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 2_500), headers=write_headers()
    )
    ref = r.json()["body"]["transfer"]["value"]["transferRef"]
    if how in ("fixed", "now"):
        ctl = world.client.post(
            "/_sandbox/transfers/outcomes",
            json={"outcome": "fail", "transferRef": ref, "now": how == "now"},
        )
        assert ctl.status_code == 200
    world.advance(2.0)
    s = status_of(world, ref)
    assert (s["status"], s["reason"], s["isTerminal"], s["isSuccessful"], s["revision"]) == (
        "failed",
        "rail_rejected",
        True,
        False,
        3,
    )
    assert len(world.state.postings(src["holdingRef"])) == 1  # only the funding credit
    assert world.state.postings(dst["holdingRef"]) == []
    bal = world.balance(src)
    assert bal["activeReservedMinorUnits"] == "0" and bal["availableMinorUnits"] == "10000"


def test_failure_probability_is_seeded(recon_world: World) -> None:
    world = recon_world
    world.state.outcomes.failure_probability = 0.5
    src, dst = world.funded(1_000_000), world.endpoint()
    refs = []
    for _ in range(20):
        r = world.client.post(
            "/v1/transfers", json=world.transfer_body(src, dst, 10), headers=write_headers()
        )
        refs.append(r.json()["body"]["transfer"]["value"]["transferRef"])
    world.advance(2.0)
    stages = {world.state.transfers[ref].stage for ref in refs}
    assert stages == {"Settled", "Failed"}


def test_replay_same_key_same_material_is_202_replay_and_moves_nothing(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    key = new_key()
    body = world.transfer_body(src, dst, 4_000)
    first = world.client.post("/v1/transfers", json=body, headers=write_headers(key))
    ref = first.json()["body"]["transfer"]["value"]["transferRef"]
    # same material in another key order
    reordered = dict(reversed(list(body.items())))
    again = world.client.post("/v1/transfers", json=reordered, headers=write_headers(key))
    assert again.status_code == 202
    j = again.json()
    assert j == {"status": 202, "body": {"replay": j["body"]["replay"]}, "evidence": []}
    replay = j["body"]["replay"]
    assert set(replay) == {"intakeRef", "envelopeRef", "occurrence", "transferRef"}
    assert re.fullmatch(r"operation-ingress-intake:[0-9a-f-]{36}", replay["intakeRef"])
    assert is_uuid(replay["envelopeRef"])
    assert replay["occurrence"] == "ReplayAccepted" and replay["transferRef"] == ref
    assert len(world.state.transfers) == 1
    assert world.balance(src)["activeReservedMinorUnits"] == "4000"
    world.advance(2.0)
    world.client.post("/v1/transfers", json=body, headers=write_headers(key))
    world.advance(2.0)
    assert len(world.state.postings(dst["holdingRef"])) == 1


def test_replay_of_a_denial_is_also_a_replay(world: World) -> None:
    src, dst = world.funded(10), world.endpoint()
    key = new_key()
    body = world.transfer_body(src, dst, 4_000)
    assert (
        world.client.post("/v1/transfers", json=body, headers=write_headers(key)).status_code == 200
    )
    again = world.client.post("/v1/transfers", json=body, headers=write_headers(key))
    assert again.status_code == 202 and "replay" in again.json()["body"]


def test_same_key_different_material_is_400(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    key = new_key()
    world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 1), headers=write_headers(key)
    )
    r = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 2), headers=write_headers(key)
    )
    j = problem(r, 400, "InvalidInput", "invalid-Input")
    assert "idempotent intake cannot change the request envelope" in j["problem"]["message"]
    assert len(world.state.transfers) == 1


def test_a_refused_write_does_not_consume_its_key(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    key = new_key()
    bad = world.transfer_body(src, dst, 1)
    bad["amountMinorUnits"] = "01"
    problem(
        world.client.post("/v1/transfers", json=bad, headers=write_headers(key)),
        400,
        "InvalidInput",
        "invalid-Input",
    )
    good = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 1), headers=write_headers(key)
    )
    assert good.status_code == 202


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.pop("sourceAccountRef"),
        lambda b: b.pop("destination"),
        lambda b: b.pop("valueUnit"),
        lambda b: b.pop("amountMinorUnits"),
        lambda b: b.update(amountMinorUnits=100),
        lambda b: b.update(amountMinorUnits="0"),
        lambda b: b.update(amountMinorUnits="-5"),
        lambda b: b.update(amountMinorUnits="1.5"),
        lambda b: b.update(sourceHoldingRef="nope"),
        lambda b: b["destination"].update(kind="external-bank"),
        lambda b: b.update(valueUnit={"kind": "crypto", "asset": "X"}),
        lambda b: b.update(valueUnit={"kind": "fiat", "currency": "USD"}),
        lambda b: b.update(feeInstruction={"kind": "mystery"}),
        lambda b: b.update(acceptedQuote="yes"),
    ],
)
def test_bad_material_is_400(world: World, mutate: object) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    body = world.transfer_body(src, dst, 1)
    mutate(body)  # type: ignore[operator]
    problem(
        world.client.post("/v1/transfers", json=body, headers=write_headers()),
        400,
        "InvalidInput",
        "invalid-Input",
    )


def test_same_source_and_destination_is_400(world: World) -> None:
    src = world.funded(10_000)
    problem(
        world.client.post(
            "/v1/transfers", json=world.transfer_body(src, src, 1), headers=write_headers()
        ),
        400,
        "InvalidInput",
        "invalid-Input",
    )


def test_not_json_is_400(world: World) -> None:
    r = world.client.post("/v1/transfers", content=b"{not json", headers=write_headers())
    problem(r, 400, "InvalidInput", "invalid-Input")


@pytest.mark.parametrize("which", ["source", "destination"])
def test_unknown_holding_is_404(world: World, which: str) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    body = world.transfer_body(src, dst, 1)
    if which == "source":
        body["sourceHoldingRef"] = new_key()
    else:
        body["destination"]["endpointRef"] = new_key()
    problem(
        world.client.post("/v1/transfers", json=body, headers=write_headers()),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )


def test_unknown_transfer_status_is_404_and_bad_ref_400(world: World) -> None:
    problem(
        world.client.get(f"/v1/transfers/{new_key()}/status", headers=AUTH),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )
    problem(
        world.client.get("/v1/transfers/xyz/status", headers=AUTH),
        400,
        "InvalidInput",
        "invalid-Input",
    )


FEE_CASES = [
    ({"kind": "request_application_fee", "bearer": "sender_pays"}, {c.FEE_APP_FEE}),
    (
        {"kind": "request_application_fee", "bearer": "application_pays"},
        {c.FEE_APP_FEE, c.FEE_APPLICATION_PAYS},
    ),
    (
        {"kind": "request_application_fee", "bearer": "receiver_pays"},
        {c.FEE_APP_FEE, c.FEE_RECEIVER_PAYS},
    ),
    ({"kind": "request_application_fee", "bearer": "split"}, {c.FEE_APP_FEE, c.FEE_SPLIT}),
    (
        {"kind": "request_external_cost_guard", "guardKind": "provider_fee"},
        {c.FEE_EXTERNAL_COST_GUARD},
    ),
    ({"kind": "request_external_cost_guard", "guardKind": "gas_fee"}, {c.FEE_EXTERNAL_COST_GUARD}),
]


@pytest.mark.parametrize("path", ["/v1/transfers", "/v1/transfers/quote"])
@pytest.mark.parametrize(("fee", "needed"), FEE_CASES)
def test_gated_fee_features_need_their_capability(
    world: World, path: str, fee: dict[str, str], needed: set[str]
) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    body = {**world.transfer_body(src, dst, 1), "feeInstruction": fee}
    base = {c.TRANSFER_CREATE, c.TRANSFER_QUOTE_READ}
    for missing in needed:
        world.state.keys["ak_test_fees"] = frozenset(base | (needed - {missing}))
        headers = {"Authorization": "Bearer ak_test_fees", "Idempotency-Key": new_key()}
        problem(
            world.client.post(path, json=body, headers=headers),
            403,
            "Forbidden",
            "forbidden-PermissionDenied",
        )
    world.state.keys["ak_test_fees"] = frozenset(base | needed)
    headers = {"Authorization": "Bearer ak_test_fees", "Idempotency-Key": new_key()}
    ok = world.client.post(path, json=body, headers=headers)
    assert ok.status_code in (200, 202), ok.text


def test_quote_reserves_nothing_and_echoes_the_request(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    body = world.transfer_body(src, dst, 999_999)
    r = world.client.post("/v1/transfers/quote", json=body, headers=AUTH)  # no Idempotency-Key
    q = read_value(r, "EngineRuntime")
    assert set(q) == {
        "quoteBasisTransferRef",
        "operationId",
        "sourceAccountRef",
        "sourceEndpointRef",
        "sourceHoldingRef",
        "destination",
        "valueUnit",
        "amountMinorUnits",
        "requestedAt",
        "observedAt",
        "noFeeReason",
        "totals",
        "lines",
        "externalCostEvidence",
    }
    assert is_uuid(q["quoteBasisTransferRef"]) and is_uuid(q["operationId"])
    for k in (
        "sourceAccountRef",
        "sourceEndpointRef",
        "sourceHoldingRef",
        "destination",
        "valueUnit",
        "amountMinorUnits",
    ):
        assert q[k] == body[k]
    assert is_ts(q["requestedAt"]) and is_ts(q["observedAt"])
    assert q["noFeeReason"] == "no_configured_fee"
    assert q["totals"] == q["lines"] == q["externalCostEvidence"] == []
    assert world.state.transfers == {}
    assert world.balance(src)["activeReservedMinorUnits"] == "0"


def test_quote_refuses_accepted_quote_and_unknown_refs(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    body = {**world.transfer_body(src, dst, 1), "acceptedQuote": {}}
    problem(
        world.client.post("/v1/transfers/quote", json=body, headers=AUTH),
        400,
        "InvalidInput",
        "invalid-Input",
    )
    body = world.transfer_body(src, dst, 1)
    body["sourceHoldingRef"] = new_key()
    problem(
        world.client.post("/v1/transfers/quote", json=body, headers=AUTH),
        404,
        "NotFound",
        "not-found-ResourceMissing",
    )


def test_transfer_with_accepted_quote(world: World) -> None:
    src, dst = world.funded(10_000), world.endpoint()
    body = world.transfer_body(src, dst, 100)
    quote = world.client.post("/v1/transfers/quote", json=body, headers=AUTH).json()
    body["acceptedQuote"] = quote["body"]["value"]
    assert world.client.post("/v1/transfers", json=body, headers=write_headers()).status_code == 202


def test_held_transfer_stays_awaiting_finality_until_told(recon_world: World) -> None:
    world = recon_world
    src, dst = world.funded(10_000), world.endpoint()
    world.client.post("/_sandbox/transfers/outcomes", json={"outcome": "hold"})
    r = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 2_500), headers=write_headers()
    )
    ref = r.json()["body"]["transfer"]["value"]["transferRef"]
    world.advance(60.0)
    assert status_of(world, ref)["status"] == "awaiting_finality"
    assert world.balance(src)["activeReservedMinorUnits"] == "2500"
    ctl = world.client.post(
        "/_sandbox/transfers/outcomes", json={"outcome": "settle", "transferRef": ref, "now": True}
    )
    assert ctl.status_code == 200
    assert status_of(world, ref)["status"] == "completed"


# -- another provider's names after reservation (status_vocabulary = alternate) --------------


def _reserved(world: World, outcome: str | None = None) -> tuple[str, dict[str, str]]:
    src, dst = world.funded(10_000), world.endpoint()
    if outcome is not None:
        world.client.post("/_sandbox/transfers/outcomes", json={"outcome": outcome})
    r = world.client.post(
        "/v1/transfers", json=world.transfer_body(src, dst, 2_500), headers=write_headers()
    )
    assert r.status_code == 202
    value = r.json()["body"]["transfer"]["value"]
    # Reservation keeps the spec's own names under every vocabulary.
    assert (value["stage"], value["revision"]) == ("PrincipalReserved", 2)
    assert status_of(world, value["transferRef"])["status"] == "awaiting_finality"
    return value["transferRef"], src


def _shown(world: World, ref: str) -> tuple[object, ...]:
    s = status_of(world, ref)
    return (s["status"], s["isTerminal"], s["isSuccessful"], s["revision"])


def test_alternate_names_a_settlement_settled(alternate_world: World) -> None:
    world = alternate_world
    ref, src = _reserved(world, "settle")
    world.advance(2.0)
    assert _shown(world, ref) == ("settled", True, True, 3)
    assert world.state.transfers[ref].stage == "SettlementCompleted"
    assert world.state.postings(src["holdingRef"])[-1]["postingSide"] == "debit"


def test_alternate_names_a_rail_failure_rejected(alternate_world: World) -> None:
    world = alternate_world
    ref, src = _reserved(world, "fail")
    world.advance(2.0)
    assert _shown(world, ref) == ("rejected", True, False, 3)
    assert world.state.transfers[ref].stage == "RailRejected"
    assert world.balance(src)["activeReservedMinorUnits"] == "0"


def test_alternate_shows_a_held_transfer_as_a_waiting_status_of_its_own(
    alternate_world: World,
) -> None:
    world = alternate_world
    ref, src = _reserved(world, "hold")
    world.advance(60.0)
    assert _shown(world, ref) == ("held", False, False, 3)
    assert world.balance(src)["activeReservedMinorUnits"] == "2500"
    ctl = world.client.post(
        "/_sandbox/transfers/outcomes", json={"outcome": "settle", "transferRef": ref, "now": True}
    )
    assert ctl.status_code == 200
    assert _shown(world, ref) == ("settled", True, True, 4)


def test_transfer_replay_is_the_spec_replay_under_every_write_too(alternate_world: World) -> None:
    world = alternate_world
    src, dst = world.funded(10_000), world.endpoint()
    key, body = new_key(), world.transfer_body(src, dst, 100)
    first = world.client.post("/v1/transfers", json=body, headers=write_headers(key))
    again = world.client.post("/v1/transfers", json=body, headers=write_headers(key))
    assert again.status_code == 202 and again.json()["evidence"] == []
    ref = first.json()["body"]["transfer"]["value"]["transferRef"]
    assert again.json()["body"]["replay"]["transferRef"] == ref
