"""Fees: the schedule (control API and SandboxConfig), fees on quotes and on the transfer status
in each line shape, the ledger legs of each bearer in each layout and journal kind read back
through /v1/balances/activity, the reservation of the sender's share, a charge that differs
from the quote, and the refusals of `feeInstruction` / `acceptedQuote`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from sandbox.fees import FeeRate, FeeSchedule
from sandbox.variants import PRESETS, VariantError, parse_variant
from tests.sandbox.conftest import make_world
from tests.sandbox.sandbox_helpers import (
    AUTH,
    World,
    new_key,
    playing,
    problem,
    read_value,
    sandbox_config,
    write_headers,
)

#: A = 10,000 and a schedule of 100 flat + 151 bp: F = 100 + 151 = 251, odd so the split's
#: halves differ (126 from the sender, 125 withheld from the receiver).
AMOUNT = 10_000
SCHEDULE = {"flatMinorUnits": 100, "basisPoints": 151}
FEE = 251
FUNDS = 20_000
NGN = {"kind": "fiat", "currency": "NGN"}
BEARERS = ["sender_pays", "application_pays", "receiver_pays", "split"]

#: Per bearer and holding: the transfer's legs as (side, amount, role); role P is the
#: principal, D a fee debit, W the split's withholding leg.
LEGS: dict[str, dict[str, list[tuple[str, int, str]]]] = {
    "sender_pays": {
        "src": [("debit", AMOUNT, "P"), ("debit", FEE, "D")],
        "dst": [("credit", AMOUNT, "P")],
        "app": [],
    },
    "receiver_pays": {
        "src": [("debit", AMOUNT, "P")],
        "dst": [("credit", AMOUNT - FEE, "P")],
        "app": [],
    },
    "application_pays": {
        "src": [("debit", AMOUNT, "P")],
        "dst": [("credit", AMOUNT, "P")],
        "app": [("debit", FEE, "D")],
    },
    "split": {
        "src": [("debit", AMOUNT, "P"), ("debit", 126, "D")],
        "dst": [("credit", AMOUNT, "P"), ("debit", 125, "W")],
        "app": [],
    },
}
#: journalKind of each role under each `fee_journal_kind`.
KINDS = {
    "transfer_settlement": {
        "P": "transfer_settlement",
        "D": "transfer_settlement",
        "W": "transfer_settlement",
    },
    "distinct": {
        "P": "transfer_settlement",
        "D": "application_fee_assessment",
        "W": "receiver_fee_withholding",
    },
}
#: Per bearer: the evidence lines as (leg, which holding, amount).
LINES = {
    "sender_pays": [("debit", "src", FEE)],
    "application_pays": [("debit", "app", FEE)],
    "receiver_pays": [("withholding", "dst", FEE)],
    "split": [("debit", "src", 126), ("withholding", "dst", 125)],
}


@pytest.fixture(autouse=True)
def _recon_names(world: World) -> Iterator[None]:
    """Our first guesses unless a test plays another variant: assertions name `flat` elements
    and read activity `oldest_first`, whatever RECON_SANDBOX_VARIANT the run sets."""
    with playing(world, PRESETS["recon"]):
        yield


def set_fees(world: World, **schedule: Any) -> None:
    r = world.client.post("/_sandbox/fees", json=schedule)
    assert r.status_code == 200, r.text


def fee_holdings(world: World) -> list[dict[str, Any]]:
    r = world.client.get("/_sandbox/fees")
    assert r.status_code == 200, r.text
    holdings: list[dict[str, Any]] = r.json()["applicationFeeHoldings"]
    return holdings


def pair(world: World, funds: int = FUNDS) -> tuple[dict[str, Any], dict[str, Any]]:
    return world.funded(funds), world.endpoint("customer_balance_internal")


def body_for(
    world: World, src: dict[str, Any], dst: dict[str, Any], amount: int, bearer: str | None
) -> dict[str, Any]:
    body = world.transfer_body(src, dst, amount)
    if bearer is not None:
        body["feeInstruction"] = {"kind": "request_application_fee", "bearer": bearer}
    return body


def create(world: World, body: dict[str, Any], status: int = 202) -> str:
    r = world.client.post("/v1/transfers", json=body, headers=write_headers())
    assert r.status_code == status, r.text
    ref: str = r.json()["body"]["transfer"]["value"]["transferRef"]
    return ref


def quote(world: World, body: dict[str, Any]) -> dict[str, Any]:
    return read_value(world.client.post("/v1/transfers/quote", json=body, headers=AUTH))


def fees_of(world: World, ref: str) -> dict[str, Any]:
    value = read_value(world.client.get(f"/v1/transfers/{ref}/status", headers=AUTH))
    fees: dict[str, Any] = value["fees"]
    return fees


def entries(world: World, holding: dict[str, Any]) -> list[dict[str, Any]]:
    """Every activity entry of a holding, oldest first, over HTTP."""
    params = {
        "accountRef": holding["accountRef"],
        "endpointRef": holding["endpointRef"],
        "holdingRef": holding["holdingRef"],
        "pageSize": "200",
        "sortDirection": "oldest_first",
    }
    value = read_value(world.client.get("/v1/balances/activity", params=params, headers=AUTH))
    found: list[dict[str, Any]] = value["entries"]
    return found


def settle(world: World, ref: str) -> None:
    world.advance(world.state.config.transfer_finality_delay_seconds)
    world.advance(world.state.config.projection_lag_seconds)
    assert fees_of(world, ref)["status"] == "charged"


# --- ledger legs: every bearer x layout x journal kind -----------------------------------


@pytest.mark.parametrize("kind", ["transfer_settlement", "distinct"])
@pytest.mark.parametrize("layout", ["same-journal", "own-journal"])
@pytest.mark.parametrize("bearer", BEARERS)
def test_legs_of_each_bearer_in_each_layout_and_journal_kind(
    world: World, bearer: str, layout: str, kind: str
) -> None:
    variant = parse_variant(f"recon,fee_layout={layout},fee_journal_kind={kind}")
    with playing(world, variant):
        set_fees(world, **SCHEDULE, bearer="sender_pays")
        src, dst = pair(world)
        ref = create(world, body_for(world, src, dst, AMOUNT, bearer))
        settle(world, ref)
        apps = fee_holdings(world)
        holdings = {"src": src, "dst": dst, "app": apps[0] if apps else None}
        assert (apps != []) == (bearer == "application_pays")
        legs = {
            "src": entries(world, src)[1:],  # the first is the funding credit
            "dst": entries(world, dst),
            "app": entries(world, apps[0]) if apps else [],
        }
    everything = [e for found in legs.values() for e in found]
    # one operation: one receipt, one instant, sides and effects agree
    assert len({e["receiptRef"] for e in everything}) == 1
    assert len({e["postedAt"] for e in everything}) == 1
    for e in everything:
        assert e["balanceEffect"] == {"debit": "decrease", "credit": "increase"}[e["postingSide"]]
        assert e["valueUnit"] == NGN
    roles: dict[str, set[str]] = {}
    for which, found in legs.items():
        got = sorted(
            (e["postingSide"], int(e["amountMinorUnits"]), e["journalKind"]) for e in found
        )
        want = sorted(
            (side, amount, KINDS[kind][role]) for side, amount, role in LEGS[bearer][which]
        )
        assert got == want, (which, got, want)
        for e, (_, _, role) in zip(
            sorted(found, key=lambda e: (e["postingSide"], int(e["amountMinorUnits"]))),
            sorted(LEGS[bearer][which], key=lambda leg: (leg[0], leg[1])),
            strict=True,
        ):
            roles.setdefault("P" if role == "P" else "fee", set()).add(e["journalRef"])
    assert len(roles["P"]) == 1
    if "fee" in roles:
        assert len(roles["fee"]) == 1
        assert (roles["fee"] == roles["P"]) == (layout == "same-journal")
    else:
        assert bearer == "receiver_pays"  # the fee is netted into the one credit
    # balances after settlement: the sender paid its share, the receiver got the rest
    sender = {"sender_pays": FEE, "split": 126}.get(bearer, 0)
    withheld = {"receiver_pays": FEE, "split": 125}.get(bearer, 0)
    assert world.balance(src)["settledMinorUnits"] == str(FUNDS - AMOUNT - sender)
    assert world.balance(src)["activeReservedMinorUnits"] == "0"
    assert world.balance(dst)["settledMinorUnits"] == str(AMOUNT - withheld)
    if holdings["app"] is not None:
        assert [e["amountMinorUnits"] for e in legs["app"]] == [str(FEE)]


@pytest.mark.parametrize("shape", ["flat", "nested", "major"])
@pytest.mark.parametrize("layout", ["own-receipt", "own-receipt-unlinked"])
@pytest.mark.parametrize("bearer", BEARERS)
def test_fee_legs_under_receipts_of_their_own(
    world: World, bearer: str, layout: str, shape: str
) -> None:
    """Each fee leg in a journal under a receipt of its own (the split's withholding on yet
    another), never the transfer's; `own-receipt` names that receipt in the leg's fee line,
    in each line shape, and `own-receipt-unlinked` names nothing."""
    variant = parse_variant(
        f"recon,fee_layout={layout},fee_journal_kind=distinct,fee_line_shape={shape}"
    )
    with playing(world, variant):
        set_fees(world, **SCHEDULE, bearer="sender_pays")
        src, dst = pair(world)
        ref = create(world, body_for(world, src, dst, AMOUNT, bearer))
        settle(world, ref)
        apps = fee_holdings(world)
        everything = entries(world, src)[1:] + entries(world, dst)
        everything += entries(world, apps[0]) if apps else []
        lines = fees_of(world, ref)["lines"]
    principal = [e for e in everything if e["journalKind"] == "transfer_settlement"]
    fee_legs = [e for e in everything if e["journalKind"] != "transfer_settlement"]
    assert len({e["receiptRef"] for e in principal}) == 1
    assert len({e["journalRef"] for e in principal}) == 1
    expected = {"sender_pays": 1, "application_pays": 1, "receiver_pays": 0, "split": 2}[bearer]
    assert len(fee_legs) == expected, "receiver_pays nets its fee into the one credit"
    receipts = {e["receiptRef"] for e in fee_legs}
    assert len(receipts) == expected and not receipts & {principal[0]["receiptRef"]}
    assert len({e["journalRef"] for e in fee_legs}) == expected
    # The same instant as the transfer, or a millisecond on where the order needs it.
    instants = sorted(datetime.fromisoformat(e["postedAt"]) for e in everything)
    assert (instants[-1] - instants[0]).total_seconds() < 0.01
    named = set()
    for line in lines:
        where = {"flat": line.get("receiptRef"), "major": line.get("postingReceiptRef")}
        where["nested"] = (line.get("posting") or {}).get("receiptRef")
        if where[shape] is not None:
            named.add(where[shape])
    assert named == (receipts if layout == "own-receipt" else set())


def test_the_default_bearer_applies_without_an_instruction(world: World) -> None:
    set_fees(world, **SCHEDULE, bearer="receiver_pays")
    src, dst = pair(world)
    ref = create(world, body_for(world, src, dst, AMOUNT, None))
    settle(world, ref)
    assert [e["amountMinorUnits"] for e in entries(world, dst)] == [str(AMOUNT - FEE)]
    assert fees_of(world, ref)["totals"][0]["bearer"] == "receiver_pays"


def test_a_rate_per_bearer_overrides_the_default_rate(world: World) -> None:
    set_fees(world, flatMinorUnits=5, perBearer={"split": {"flatMinorUnits": 40}})
    src, dst = pair(world)
    split_quote = quote(world, body_for(world, src, dst, AMOUNT, "split"))
    sender_quote = quote(world, body_for(world, src, dst, AMOUNT, "sender_pays"))
    assert split_quote["totals"][0]["amountMinorUnits"] == "40"
    assert [line["amountMinorUnits"] for line in split_quote["lines"]] == ["20", "20"]
    assert sender_quote["totals"][0]["amountMinorUnits"] == "5"


def test_proportional_part_rounds_half_up(world: World) -> None:
    set_fees(world, basisPoints=25)  # 0.25 %
    src, dst = pair(world)
    # 250 * 25 / 10,000 = 0.625 -> 1; 180 * 25 / 10,000 = 0.45 -> 0: no fee at all
    up = quote(world, body_for(world, src, dst, 250, None))
    assert up["totals"][0]["amountMinorUnits"] == "1"
    free = quote(world, body_for(world, src, dst, 180, None))
    assert free["noFeeReason"] == "no_configured_fee" and free["totals"] == free["lines"] == []


# --- quote and status: every line shape ----------------------------------------------------


def expected_element(shape: str, bearer: str, amount: int, currency: str) -> dict[str, Any]:
    unit = {"kind": "fiat", "currency": currency}
    if shape == "flat":
        return {
            "kind": "application_fee",
            "bearer": bearer,
            "amountMinorUnits": str(amount),
            "valueUnit": unit,
        }
    if shape == "nested":
        paid_by = {
            "sender_pays": "sender",
            "receiver_pays": "receiver",
            "application_pays": "application",
            "split": "split",
        }
        return {
            "feeKind": "application_fee",
            "paidBy": paid_by[bearer],
            "amount": {"minorUnits": str(amount), "unit": unit},
        }
    major = {
        "NGN": f"{amount // 100}.{amount % 100:02d}",
        "JPY": str(amount),
        "KWD": f"{amount // 1000}.{amount % 1000:03d}",
    }
    return {
        "type": "application_fee",
        "bearer": bearer,
        "amount": major[currency],
        "currency": currency,
    }


@pytest.mark.parametrize("shape", ["flat", "nested", "major"])
@pytest.mark.parametrize("bearer", BEARERS)
def test_quote_and_status_show_totals_and_lines_in_each_shape(
    world: World, shape: str, bearer: str
) -> None:
    with playing(world, parse_variant(f"recon,fee_line_shape={shape}")):
        set_fees(world, **SCHEDULE)
        src, dst = pair(world)
        body = body_for(world, src, dst, AMOUNT, bearer)
        q = quote(world, body)
        apps = fee_holdings(world)
        refs = {"src": src["holdingRef"], "dst": dst["holdingRef"]}
        if apps:
            refs["app"] = apps[0]["holdingRef"]
        totals = [expected_element(shape, bearer, FEE, "NGN")]
        lines = [
            expected_element(shape, bearer, amount, "NGN") | {"leg": leg, "holdingRef": refs[which]}
            for leg, which, amount in LINES[bearer]
        ]
        assert "noFeeReason" not in q
        assert q["totals"] == totals
        assert q["lines"] == lines
        assert q["externalCostEvidence"] == []
        ref = create(world, {**body, "acceptedQuote": q})
        waiting = fees_of(world, ref)
        assert waiting == {
            "status": "assessed",
            "reason": "configured_fee",
            "totals": totals,
            "lines": lines,
        }
        settle(world, ref)
        assert fees_of(world, ref) == {
            "status": "charged",
            "reason": "configured_fee",
            "totals": totals,
            "lines": lines,
        }


@pytest.mark.parametrize("currency", ["NGN", "JPY", "KWD"])
def test_major_shape_writes_the_currency_exponent(world: World, currency: str) -> None:
    with playing(world, PRESETS["sparse"]):
        set_fees(world, **SCHEDULE)
        src = world.endpoint(currency=currency)
        world.credit(src, FUNDS)
        dst = world.endpoint("customer_balance_internal", currency=currency)
        q = quote(world, body_for(world, src, dst, AMOUNT, "sender_pays"))
    assert q["totals"] == [expected_element("major", "sender_pays", FEE, currency)]


# --- reservation, drift, outcomes without a charge -----------------------------------------


@pytest.mark.parametrize(
    ("bearer", "share"),
    [("sender_pays", FEE), ("split", 126), ("receiver_pays", 0), ("application_pays", 0)],
)
def test_available_balance_must_cover_the_amount_and_the_senders_share(
    world: World, bearer: str, share: int
) -> None:
    set_fees(world, **SCHEDULE)
    short, dst = pair(world, AMOUNT + share - 1)
    denied = create(world, body_for(world, short, dst, AMOUNT, bearer), status=200)
    assert fees_of(world, denied) == {
        "status": "not_charged",
        "reason": "transfer_not_settled",
        "totals": [],
        "lines": [],
    }
    exact = world.funded(AMOUNT + share)
    create(world, body_for(world, exact, dst, AMOUNT, bearer))
    balance = world.balance(exact)
    assert balance["activeReservedMinorUnits"] == str(AMOUNT + share)
    assert balance["availableMinorUnits"] == "0"


def test_a_failed_transfer_charges_nothing_and_posts_nothing(world: World) -> None:
    set_fees(world, **SCHEDULE)
    world.client.post("/_sandbox/transfers/outcomes", json={"outcome": "fail"})
    src, dst = pair(world)
    ref = create(world, body_for(world, src, dst, AMOUNT, "application_pays"))
    world.advance(world.state.config.transfer_finality_delay_seconds)
    assert fees_of(world, ref)["status"] == "not_charged"
    assert len(entries(world, src)) == 1 and entries(world, dst) == []
    assert all(entries(world, h) == [] for h in fee_holdings(world))
    assert world.balance(src)["availableMinorUnits"] == str(FUNDS)


@pytest.mark.parametrize(("drift", "charged"), [(7, FEE + 7), (-50, FEE - 50), (-1_000, 0)])
def test_the_charge_can_differ_from_the_accepted_quote(
    world: World, drift: int, charged: int
) -> None:
    set_fees(world, **SCHEDULE, driftMinorUnits=drift)
    src, dst = pair(world)
    body = body_for(world, src, dst, AMOUNT, "sender_pays")
    q = quote(world, body)
    assert q["totals"][0]["amountMinorUnits"] == str(FEE)  # the quote shows the schedule alone
    ref = create(world, {**body, "acceptedQuote": q})
    world.advance(world.state.config.transfer_finality_delay_seconds)
    fees = fees_of(world, ref)
    debits = [e for e in entries(world, src) if e["postingSide"] == "debit"]
    principal = [e for e in debits if e["amountMinorUnits"] == str(AMOUNT)]
    fee_legs = [e["amountMinorUnits"] for e in debits if e not in principal]
    assert len(principal) == 1
    if charged:
        assert fees["status"] == "charged"
        assert fees["totals"][0]["amountMinorUnits"] == str(charged)
        assert fee_legs == [str(charged)]
    else:
        assert fees["status"] == "not_required" and fee_legs == []


def test_without_a_schedule_every_bearer_is_as_before(world: World) -> None:
    src, dst = pair(world)
    for bearer in [None, *BEARERS]:
        body = body_for(world, src, dst, 1_000, bearer)
        q = quote(world, body)
        assert q["noFeeReason"] == "no_configured_fee"
        assert q["totals"] == q["lines"] == []
        ref = create(world, {**body, "acceptedQuote": q})
        world.advance(world.state.config.transfer_finality_delay_seconds)
        assert fees_of(world, ref) == {
            "status": "not_required",
            "reason": "no_configured_fee",
            "totals": [],
            "lines": [],
        }
    legs = entries(world, src)[1:]
    assert [(e["postingSide"], e["amountMinorUnits"], e["journalKind"]) for e in legs] == [
        ("debit", "1000", "transfer_settlement")
    ] * 5
    assert len(entries(world, dst)) == 5 and fee_holdings(world) == []


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/transfers", "/v1/transfers/quote"])
def test_unknown_bearer_is_400(world: World, path: str) -> None:
    src, dst = pair(world)
    body = body_for(world, src, dst, AMOUNT, "nobody_pays")
    r = world.client.post(path, json=body, headers=write_headers())
    j = problem(r, 400, "InvalidInput", "invalid-Input")
    assert "feeInstruction.bearer" in j["problem"]["message"]


@pytest.mark.parametrize("bearer", ["receiver_pays", "split"])
def test_a_fee_that_withholds_the_whole_amount_is_400(world: World, bearer: str) -> None:
    set_fees(world, flatMinorUnits=500)
    src, dst = pair(world)
    small = 500 if bearer == "receiver_pays" else 250
    for path in ("/v1/transfers", "/v1/transfers/quote"):
        r = world.client.post(
            path, json=body_for(world, src, dst, small, bearer), headers=write_headers()
        )
        j = problem(r, 400, "InvalidInput", "invalid-Input")
        assert "withhold" in j["problem"]["message"]
    assert world.state.transfers == {}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda q: q.update(amountMinorUnits="9999"), "acceptedQuote.amountMinorUnits"),
        (lambda q: q.update(sourceHoldingRef=new_key()), "acceptedQuote.sourceHoldingRef"),
        (lambda q: q["destination"].update(holdingRef=new_key()), "acceptedQuote.destination"),
        (
            lambda q: q.update(valueUnit={"kind": "fiat", "currency": "KES"}),
            "acceptedQuote.valueUnit",
        ),
        (lambda q: q.pop("quoteBasisTransferRef"), "acceptedQuote.quoteBasisTransferRef"),
        (lambda q: q.update(quoteBasisTransferRef="q-1"), "acceptedQuote.quoteBasisTransferRef"),
    ],
)
def test_an_accepted_quote_for_other_material_is_400(world: World, change: Any, named: str) -> None:
    set_fees(world, **SCHEDULE)
    src, dst = pair(world)
    body = body_for(world, src, dst, AMOUNT, "sender_pays")
    q = quote(world, body)
    change(q)
    r = world.client.post(
        "/v1/transfers", json={**body, "acceptedQuote": q}, headers=write_headers()
    )
    j = problem(r, 400, "InvalidInput", "invalid-Input")
    assert named in j["problem"]["message"]
    assert world.state.transfers == {}


# --- the schedule: control API, start-time config, variants --------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"bearer": "nobody_pays"},
        {"flatMinorUnits": -1},
        {"basisPoints": 1.5},
        {"flatMinorUnits": True},
        {"perBearer": {"split": {"flatMinorUnits": "x"}}},
        {"perBearer": {"everyone": {"flatMinorUnits": 1}}},
        {"driftMinorUnits": "lots"},
    ],
)
def test_a_bad_schedule_is_refused_and_changes_nothing(world: World, bad: dict[str, Any]) -> None:
    set_fees(world, flatMinorUnits=3)
    r = world.client.post("/_sandbox/fees", json=bad)
    assert r.status_code == 400 and r.json()["error"]
    assert world.client.get("/_sandbox/fees").json()["schedule"]["flatMinorUnits"] == 3


def test_the_schedule_reads_back_and_clears(world: World) -> None:
    assert world.client.get("/_sandbox/fees").json() == {
        "schedule": None,
        "applicationFeeHoldings": [],
    }
    set_fees(
        world,
        flatMinorUnits="10",
        basisPoints=2,
        bearer="split",
        perBearer={"sender_pays": {"basisPoints": 9}},
        driftMinorUnits=-3,
    )
    assert world.client.get("/_sandbox/fees").json()["schedule"] == {
        "flatMinorUnits": 10,
        "basisPoints": 2,
        "bearer": "split",
        "perBearer": {"sender_pays": {"flatMinorUnits": 0, "basisPoints": 9}},
        "driftMinorUnits": -3,
    }
    assert world.client.delete("/_sandbox/fees").status_code == 200
    src, dst = pair(world)
    assert (
        quote(world, body_for(world, src, dst, AMOUNT, None))["noFeeReason"] == "no_configured_fee"
    )


def test_a_schedule_set_at_start_survives_a_reset() -> None:
    config = sandbox_config(
        fee_schedule=FeeSchedule(FeeRate(100, 151), "split"), variant=PRESETS["recon"]
    )
    for world in make_world(config):
        world.client.delete("/_sandbox/fees")
        world.client.post("/_sandbox/reset")
        src, dst = pair(world)
        q = quote(world, body_for(world, src, dst, AMOUNT, None))
        assert [line["amountMinorUnits"] for line in q["lines"]] == ["126", "125"]


def test_presets_and_overrides_of_the_fee_choices() -> None:
    assert (
        PRESETS["recon"].fee_layout,
        PRESETS["recon"].fee_journal_kind,
        PRESETS["recon"].fee_line_shape,
    ) == (
        "same-journal",
        "transfer_settlement",
        "flat",
    )
    standard, sparse = PRESETS["standard"], PRESETS["sparse"]
    assert (standard.fee_layout, standard.fee_journal_kind, standard.fee_line_shape) == (
        "own-receipt",
        "distinct",
        "nested",
    )
    assert (sparse.fee_layout, sparse.fee_journal_kind, sparse.fee_line_shape) == (
        "own-receipt-unlinked",
        "distinct",
        "major",
    )
    mixed = parse_variant("sparse,fee_layout=own-journal,fee_line_shape=flat")
    assert (mixed.fee_layout, mixed.fee_journal_kind, mixed.fee_line_shape) == (
        "own-journal",
        "distinct",
        "flat",
    )
    for bad in (
        "recon,fee_layout=sideways",
        "recon,fee_line_shape=round",
        "recon,fee_journal_kind=x",
    ):
        with pytest.raises(VariantError, match="takes one of"):
            parse_variant(bad)
