"""The demo's scenario: ordinary business with four known faults injected.

Everything goes through the provider's APIs (recon's own clients) and the sandbox's control API;
recon learns of it the way it would in production, from webhooks and polling. The scenario knows
exactly which drifts it injected, so the demo can check that recon reports those and nothing
else.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.transfers import RESERVED, request_transfer
from upstream import (
    BEARERS,
    CreditRequest,
    Destination,
    Endpoint,
    EndpointRequest,
    GatewayClient,
    HoldingAddress,
    TransferRequest,
    ValueUnit,
    WriteReplayed,
    fee_instruction,
)

#: The fiat currency of the scenario.
NGN: Final = ValueUnit.fiat("NGN")
#: A unit that is no currency: an on-chain asset counted in 10^-18, whose amounts pass 2^63
#: base units at about 9.2 whole units, so the demo moves money no 64-bit column could hold.
ETH: Final = ValueUnit(kind="token", asset="ETH", network="ethereum")
#: Its display exponent, as an operator configures it (RECON_UNIT_EXPONENTS): the provider
#: shows none, and webhooks in major units need it to be read exactly.
UNIT_EXPONENTS: Final = f"{ETH}=18"
#: Two credits to the token holding, 12.5 ETH and 0.000000000000000001 ETH (one base unit):
#: their sum is past 2^63 and only exact arithmetic keeps the last unit.
ETH_CREDITS: Final = (12_500_000_000_000_000_000, 1)

#: Endpoints that take external money (inbound credits) have this template.
COLLECTION_TEMPLATE: Final = "customer_balance_collection_child"

#: The fee schedule of the fee-paying transfers (the sandbox's control API): 25.00 NGN plus
#: 0.1% of the amount, so each bearer's legs differ from the amount and from each other.
FEE_SCHEDULE: Final = {"flatMinorUnits": 2_500, "basisPoints": 10}
#: One fee-paying transfer per bearer, to a customer each: distinct amounts, so each transfer's
#: legs are told apart at a glance in the console.
FEE_TRANSFERS: Final = dict(zip(BEARERS, (300_000, 320_000, 340_000, 360_000), strict=True))

#: Alert kinds each injected fault must raise (one alert each), and no other kind may be open.
EXPECTED_ALERT_KINDS: Final = {
    "dropped_notification": "posting_without_notification",
    "altered_amount": "amount_mismatch",
    "same_id_other_body": "delivery_body_conflict",
    "stuck_transfer": "finality_overdue",
}


@dataclass
class ScenarioRecord:
    """What the scenario did, for the closing summary and the checks."""

    endpoints: list[HoldingAddress] = field(default_factory=list)
    credits: int = 0
    transfers_settled: int = 0
    transfers_with_fees: int = 0
    transfers_denied: int = 0
    stuck_transfer: uuid.UUID | None = None
    injected: list[str] = field(default_factory=list)


class SandboxControl:
    """The sandbox's own control API (faults, outcomes): not part of the provider's specs."""

    def __init__(self, base_url: str) -> None:
        self._http = httpx.Client(base_url=f"{base_url}/_sandbox", timeout=10.0)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _answer(self._http.post(path, json=body))

    def get(self, path: str) -> dict[str, Any]:
        return _answer(self._http.get(path))

    def event_count(self, event_type: str | None = None) -> int:
        """Events the sandbox has emitted so far, of one type or of every type."""
        events = self.get("/events")["events"]
        return sum(1 for e in events if event_type in (None, e["event"]))

    def delivered_labels(self, event_id: str) -> list[str]:
        """Labels (original, other_body, ...) of the attempts the receiver acknowledged, in order."""
        return [
            d["label"]
            for d in self.get("/deliveries")["deliveries"]
            if d["eventId"] == event_id and d["outcome"] == "delivered"
        ]

    def last_event_id(self, event_type: str) -> str:
        return str([e for e in self.get("/events")["events"] if e["event"] == event_type][-1]["id"])

    def delivery_fault(self, event_type: str, kind: str) -> None:
        self.post("/faults/deliveries", {"eventType": event_type, "kind": kind, "count": 1})

    def clear_faults(self) -> None:
        self._http.delete("/faults").raise_for_status()

    def clear_fees(self) -> None:
        """No fee schedule: transfers are free again (`no_configured_fee`)."""
        self._http.delete("/fees").raise_for_status()

    def close(self) -> None:
        self._http.close()


def _answer(response: httpx.Response) -> dict[str, Any]:
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def open_customer_account(
    gateway: GatewayClient, unit: ValueUnit, owner: uuid.UUID
) -> tuple[HoldingAddress, Endpoint]:
    """A new customer account (a collection endpoint of `owner`) in `unit`: its holding's
    address, and the endpoint itself for what else a caller shows of it."""
    created = gateway.create_programmable_endpoint(
        EndpointRequest(
            template=COLLECTION_TEMPLATE,
            owner_ref=owner,
            owner_kind="business-entity",
            value_unit=unit,
        )
    )
    assert not isinstance(created, WriteReplayed), "each create is sent once, never replayed"
    ep = created.value.endpoint
    assert ep.holding_ref is not None, "a created endpoint always names its holding"
    address = HoldingAddress(
        account_ref=ep.account_ref, endpoint_ref=ep.endpoint_ref, holding_ref=ep.holding_ref
    )
    return address, ep


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def run_scenario(
    gateway: GatewayClient,
    control: SandboxControl,
    session_factory: sessionmaker[Session],
    step: Callable[[str], None],
) -> ScenarioRecord:
    """Drive the business day; `step` is told each step's name (the progress display)."""
    record = ScenarioRecord()
    owner = uuid.uuid4()

    def open_account(unit: ValueUnit) -> HoldingAddress:
        address, _ = open_customer_account(gateway, unit, owner)
        record.endpoints.append(address)
        return address

    step("opening four customer accounts")
    treasury, alice, bob, carol = (open_account(NGN) for _ in range(4))
    step("opening a wallet holding in a unit that is no currency (ETH, 18 decimals)")
    wallet = open_account(ETH)

    def credit(
        to: HoldingAddress, amount_minor: int, fault: str | None = None, unit: ValueUnit = NGN
    ) -> None:
        before = control.event_count()
        if fault is not None:
            control.delivery_fault("PAYMENT_RECEIVED", fault)
            record.injected.append(fault)
        gateway.simulate_inbound_credit(
            CreditRequest(target=to, value_unit=unit, amount_minor_units=amount_minor)
        )
        # The fault must hit this credit's event and no other: wait until it is emitted.
        _wait_for(lambda: control.event_count() > before, "the credit's webhook event")
        if fault is not None:
            control.clear_faults()
        record.credits += 1

    step("receiving inbound payments")
    credit(treasury, 50_000_000)
    credit(alice, 125_050)
    credit(bob, 9_999)
    credit(carol, 300_000)
    credit(alice, 42_000)
    for amount in ETH_CREDITS:
        credit(wallet, amount, unit=ETH)

    step("injecting faults: a dropped webhook, an altered amount, a re-used delivery id")
    credit(bob, 77_700, fault="drop")
    credit(carol, 15_000, fault="altered_amount")
    credit(alice, 61_250, fault="same_id_other_body")
    # The provider re-sends the delivery id with another body only after our receiver has
    # acknowledged the first: recon must keep the original and flag the other, never the
    # reverse. Wait until both are through, in that order, so the fault is what it says.
    conflicted = control.last_event_id("PAYMENT_RECEIVED")
    _wait_for(
        lambda: control.delivered_labels(conflicted) == ["original", "other_body"],
        "the original body, then the other body, acknowledged by recon",
    )

    def transfer(to: HoldingAddress, amount_minor: int, fee_bearer: str | None = None) -> uuid.UUID:
        creation = request_transfer(
            gateway,
            session_factory,
            TransferRequest(
                source=treasury,
                destination=Destination.internal(to),
                value_unit=NGN,
                amount_minor_units=amount_minor,
                fee_instruction=fee_instruction(fee_bearer) if fee_bearer else None,
            ),
        )
        if creation.outcome == RESERVED:
            return creation.transfer_ref
        record.transfers_denied += 1
        return creation.transfer_ref

    step("paying out: two transfers that settle, one the balance cannot cover")
    transfer(alice, 1_000_000)
    transfer(bob, 250_000)
    record.transfers_settled = 2
    transfer(carol, 10_000_000_000)

    step("paying out with fees: one transfer under each bearer")
    control.post("/fees", FEE_SCHEDULE)
    try:
        for to, (bearer, amount) in zip(
            (alice, bob, carol, alice), FEE_TRANSFERS.items(), strict=True
        ):
            transfer(to, amount, fee_bearer=bearer)
            record.transfers_settled += 1
            record.transfers_with_fees += 1
    finally:
        control.clear_fees()

    step("injecting a stuck transfer (the rail never answers)")
    control.post("/transfers/outcomes", {"outcome": "hold"})
    record.stuck_transfer = transfer(carol, 5_000)
    record.injected.append("stuck_transfer")
    # Names as the expectations know them.
    record.injected = [
        {"drop": "dropped_notification", "altered_amount": "altered_amount"}.get(i, i)
        for i in record.injected
    ]
    return record
