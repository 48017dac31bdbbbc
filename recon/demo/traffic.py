"""A business day of traffic against a sandbox already running: `recon sandbox traffic`.

`recon demo` starts its own sandbox and recon and checks the result; this drives one a person
started (`make sandbox`, beside the Procfile's processes), so a laptop run has something to
reconcile: inbound credits to customer accounts, transfers between them and, on request,
faults of the provider's making. Everything goes through the provider's APIs with recon's own
clients, as `recon credit simulate` and `recon transfer create` do (a transfer's intent is
stored in recon's store first, so recon follows it), and through the sandbox's `/_sandbox`
control API for the faults. Each step is said before it is sent, the amount in figures and
words, and each fault with what recon should make of it.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy.orm import Session, sessionmaker

from foundation import format_money, said_back
from recon.demo.scenario import COLLECTION_TEMPLATE, SandboxControl, open_customer_account
from recon.gateway_holdings import GatewayHolding, gateway_holdings
from reconciliation.transfers import DENIED, request_transfer
from upstream import (
    CreditRequest,
    Destination,
    GatewayClient,
    HoldingAddress,
    TransferRequest,
    ValueUnit,
    WriteReplayed,
)

#: The event a credit's webhook carries: what the delivery faults act on.
CREDIT_EVENT: Final = "PAYMENT_RECEIVED"


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault a person can ask for: how the sandbox plays it, and what recon should show."""

    #: The sandbox's delivery fault kind (sandbox/faults.py); None: a transfer's outcome held.
    delivery_kind: str | None
    expect: str


#: Faults by the name typed after `--faults`; each hits one extra credit or transfer of its own.
FAULTS: Final = {
    "dropped-webhook": Fault(
        "drop",
        "a posting_without_notification alert once RECON_NOTIFICATION_GRACE_SECONDS have passed",
    ),
    "amount-mismatch": Fault("altered_amount", "an amount_mismatch alert at the next reconcile"),
    "duplicate-delivery": Fault(
        "duplicate", "no alert: recon stores the delivery once and acknowledges its twin"
    ),
    "conflicting-delivery": Fault(
        "same_id_other_body", "a delivery_body_conflict alert (recon keeps the first body)"
    ),
    "stuck-transfer": Fault(
        None, "a finality_overdue alert once RECON_FINALITY_DEADLINE_SECONDS have passed"
    ),
}

#: Credits are drawn between these minor units: 100.00 to 50,000.00 in a two-decimal unit.
CREDIT_RANGE: Final = (10_000, 5_000_000)
#: The smallest transfer, in minor units (10.00 in a two-decimal unit).
SMALLEST_TRANSFER: Final = 1_000
#: How long to wait for the sandbox to post a credit or project a balance: its own delays are
#: under a second unless it was started with longer ones.
SETTLE_SECONDS: Final = 20.0


class TrafficError(Exception):
    """The sandbox cannot take this traffic (no webhook for a fault, a balance that never
    lands); the message says what to do."""


def parse_faults(text: str) -> list[str]:
    """`duplicate-delivery,amount-mismatch` as names, each once; ValueError names the known."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fault {', '.join(unknown)}; the faults are {', '.join(FAULTS)}")
    return list(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class DayPlan:
    """What a day of traffic is made of."""

    accounts: int
    credits: int
    transfers: int
    faults: tuple[str, ...]
    unit: str


@dataclass
class TrafficRecord:
    """What the day did, for its closing line (and for tests)."""

    accounts: list[GatewayHolding] = field(default_factory=list)
    opened: int = 0
    credited: int = 0
    credits: int = 0
    transfers: list[uuid.UUID] = field(default_factory=list)
    denied: int = 0
    faults: list[str] = field(default_factory=list)


@dataclass
class Traffic:
    """The clients one day of traffic goes through, and where each step is said."""

    gateway: GatewayClient
    sessions: sessionmaker[Session]
    control: SandboxControl
    say: Callable[[str], None]
    rng: random.Random
    record: TrafficRecord = field(default_factory=TrafficRecord)


def run_day(traffic: Traffic, plan: DayPlan) -> TrafficRecord:
    """Credits spread over the accounts, transfers from the one credited most, then one extra
    credit or transfer per fault. Delivery faults need recon's webhook at the sandbox."""
    check_faults_can_fire(traffic.control, plan.faults)
    accounts = _accounts(traffic, plan.accounts, plan.unit)
    credited: dict[uuid.UUID, int] = {}
    for i in range(plan.credits):
        to = accounts[i % len(accounts)]
        amount = traffic.rng.randint(*CREDIT_RANGE)
        _credit(traffic, to, amount, plan.unit)
        credited[to.address.holding_ref] = credited.get(to.address.holding_ref, 0) + amount
    delivery_faults = [f for f in plan.faults if FAULTS[f].delivery_kind]
    transfer_faults = [f for f in plan.faults if not FAULTS[f].delivery_kind]
    for fault in delivery_faults:
        to, amount = traffic.rng.choice(accounts), traffic.rng.randint(*CREDIT_RANGE)
        _credit(traffic, to, amount, plan.unit, fault)
    if len(accounts) < 2:
        return traffic.record
    source = max(accounts, key=lambda a: credited.get(a.address.holding_ref, 0))
    others = [a for a in accounts if a is not source]
    # Half of what the source received today, shared out: every transfer can be covered.
    budget = credited.get(source.address.holding_ref, 0) // 2
    share = max(SMALLEST_TRANSFER, budget // max(plan.transfers + len(transfer_faults), 1))
    outgoing: list[str | None] = [None] * plan.transfers
    for i, transfer_fault in enumerate([*outgoing, *transfer_faults]):
        amount = traffic.rng.randint(SMALLEST_TRANSFER, share)
        # Wait for today's credits to show as available; without any, send at once (what the
        # source held before decides, and a denial is a business day's event too).
        to = others[i % len(others)]
        _transfer(traffic, source, to, amount, plan.unit, transfer_fault, budget > 0)
    return traffic.record


def _accounts(traffic: Traffic, wanted: int, unit: str) -> list[GatewayHolding]:
    """`wanted` customer accounts in the unit: the register's first ones, then new ones."""
    found = [
        h
        for h in gateway_holdings(traffic.gateway, with_account_number=True)
        if h.template == COLLECTION_TEMPLATE and h.unit == unit
    ][:wanted]
    missing = wanted - len(found)
    traffic.say(
        f"accounts: {len(found)} {unit} customer account(s) found on the gateway"
        + (f", opening {missing}" if missing > 0 else "")
    )
    while len(found) < wanted:
        found.append(_open_account(traffic.gateway, unit))
        traffic.record.opened += 1
    for h in found:
        a = h.address
        traffic.say(f"  {h.label}: {a.account_ref}:{a.endpoint_ref}:{a.holding_ref}")
    traffic.record.accounts = found
    return found


def _open_account(gateway: GatewayClient, unit: str) -> GatewayHolding:
    address, ep = open_customer_account(gateway, ValueUnit.fiat(unit), uuid.uuid4())
    numbers = [loc.account_number for loc in ep.locators if loc.account_number]
    return GatewayHolding(
        address=address,
        template=ep.template,
        unit=unit,
        account_number=numbers[0] if numbers else None,
    )


def _credit(
    traffic: Traffic, to: GatewayHolding, amount: int, unit: str, fault: str | None = None
) -> None:
    """One inbound credit; under a delivery fault, its webhook delivery carries the fault."""
    kind = FAULTS[fault].delivery_kind if fault else None
    traffic.say(f"{_fault_prefix(fault)}crediting {said_back(amount, unit)} to {to.label}")
    before = traffic.control.event_count(CREDIT_EVENT)
    if kind is not None:
        traffic.control.delivery_fault(CREDIT_EVENT, kind)
    result = traffic.gateway.simulate_inbound_credit(
        CreditRequest(target=to.address, value_unit=ValueUnit.fiat(unit), amount_minor_units=amount)
    )
    made = result.subject_ref if isinstance(result, WriteReplayed) else result.value.simulation_ref
    # The credit's event comes when its posting lands, a moment later. Until it has, a fault
    # armed for the next credit would take this one's delivery instead: wait for it.
    _wait(lambda: traffic.control.event_count(CREDIT_EVENT) > before, "the credit's webhook event")
    if fault is not None:
        traffic.record.faults.append(fault)
    traffic.say(f"  accepted: simulation {made}{_expect(fault)}")
    traffic.record.credits += 1
    traffic.record.credited += amount


def _transfer(
    traffic: Traffic,
    source: GatewayHolding,
    to: GatewayHolding,
    amount: int,
    unit: str,
    fault: str | None,
    funded_today: bool,
) -> None:
    """One transfer as `recon transfer create` sends it: its intent and key stored first."""
    if funded_today:
        _wait(
            lambda: _available(traffic.gateway, source.address) >= amount,
            f"{format_money(amount, unit)} available on {source.label}",
        )
    traffic.say(
        f"{_fault_prefix(fault)}sending {said_back(amount, unit)} from {source.label} to {to.label}"
    )
    if fault is not None:
        traffic.control.post("/transfers/outcomes", {"outcome": "hold"})
        traffic.record.faults.append(fault)
    done = request_transfer(
        traffic.gateway,
        traffic.sessions,
        TransferRequest(
            source=source.address,
            destination=Destination.internal(to.address),
            value_unit=ValueUnit.fiat(unit),
            amount_minor_units=amount,
        ),
        via="cli",
    )
    traffic.record.transfers.append(done.transfer_ref)
    if done.outcome == DENIED:
        traffic.record.denied += 1
        reason = done.denial_reason or "no reason"
        traffic.say(f"  denied: transfer {done.transfer_ref}: {reason}; nothing moved")
    else:
        traffic.say(f"  accepted: transfer {done.transfer_ref}{_expect(fault)}")


def _fault_prefix(fault: str | None) -> str:
    return f"fault {fault}: " if fault else ""


def _expect(fault: str | None) -> str:
    return f"; expect {FAULTS[fault].expect}" if fault else ""


def _available(gateway: GatewayClient, holding: HoldingAddress) -> int:
    snap = gateway.balance(holding.account_ref, holding.endpoint_ref, holding.holding_ref)
    return sum(hb.available_minor_units for hb in snap.value.holding_balances)


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise TrafficError(
                f"waited {SETTLE_SECONDS:.0f} s for {what}; was the sandbox started with long "
                "delays (--finality-delay, --projection-lag)?"
            )
        time.sleep(0.1)


def check_faults_can_fire(control: SandboxControl, faults: Sequence[str]) -> None:
    """A delivery fault acts on a webhook delivery: refuse when no webhook would carry it."""
    if not any(FAULTS[name].delivery_kind for name in faults):
        return
    hooks = control.get("/state")["webhooks"]
    if not any(h["status"] == "ACTIVE" and CREDIT_EVENT in h["eventTypes"] for h in hooks):
        raise TrafficError(
            f"no active webhook at the sandbox takes {CREDIT_EVENT}, so a delivery fault would "
            "hit nothing: start recon's web process (it registers its webhook), then run again"
        )
