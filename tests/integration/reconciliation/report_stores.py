"""Stores for the report's figure tests: the demo's business day, and generated ones.

`demo_day` builds, row by row, what `recon demo` drives through the sandbox: four customer
accounts, inbound payments, the four injected faults (a dropped webhook, an altered amount, a
re-used delivery id with another body, a transfer stuck at the rail) and the transfer the
balance cannot cover, so the report's figures can be checked against a store whose every
item the test knows.

`Story` and `stories()` generate stores for the hypothesis properties: a few holdings (some
with a bank account, in currencies of different exponents) and a mix of items of every kind
recon meets, each with its own age.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from hypothesis import strategies as st

from reconciliation.store.models import Holding, Notification, Posting
from tests.integration.reconciliation.builders import Store, at

#: What each generated transfer status is, by the provider's flags (the report's outcomes).
OUTCOME_OF_STATUS: Final = {
    "completed": "settled",
    "awaiting_finality": "in_flight",
    "reservation_denied": "refused",
    "failed": "failed",
}

#: Kinds of generated story lines, each a thing that happens to a real account.
LINE_KINDS: Final = (
    "credit_notified",  # money in, and the webhook said so
    "credit_silent",  # money in, no webhook
    "phantom",  # a webhook, no money
    "duplicate",  # money in, the webhook twice under two event ids (a person must choose)
    "altered",  # money in, the webhook says one minor unit more
    "transfer",  # a transfer we asked for, in one of the four outcomes
)

DAY: Final = 86_400


@dataclass
class DemoDay:
    """The demo's accounts and the items the test refers to."""

    treasury: Holding
    alice: Holding
    bob: Holding
    carol: Holding
    dropped_receipt: uuid.UUID
    altered_event: str
    stuck_ref: uuid.UUID


def demo_day(store: Store, start: float = -3_600) -> DemoDay:
    """The demo's scenario, `start` seconds from the builders' T0, one minute per step."""
    treasury, alice, bob, carol = (store.holding() for _ in range(4))
    clock = iter(range(int(start), int(start) + 3_600, 60))

    def credit(
        to: Holding, amount: int, *, notified: bool = True, claimed: int | None = None
    ) -> tuple[Posting, Notification | None]:
        when = at(next(clock))
        posting = store.posting(to, amount, posted=when)
        note = None
        if notified:
            note = store.notification(
                "PAYMENT_RECEIVED",
                to,
                claimed if claimed is not None else amount,
                receipt=posting.receipt_ref,
                occurred=when,
            )
        return posting, note

    credit(treasury, 50_000_000)
    credit(alice, 125_050)
    credit(bob, 9_999)
    credit(carol, 300_000)
    credit(alice, 42_000)
    dropped, _ = credit(bob, 77_700, notified=False)
    _, altered = credit(carol, 15_000, claimed=15_001)
    credit(alice, 61_250)
    store.delivery("evt-reused", b'{"amount":"612.50"}', received=at(next(clock)))
    store.delivery("evt-reused", b'{"amount":"999.99"}', received=at(next(clock)))

    for dest, amount in ((alice, 1_000_000), (bob, 250_000)):
        when = at(next(clock))
        transfer = store.transfer(treasury, dest, amount, requested=when)
        _, _, receipt = store.settle(transfer, treasury, dest, posted=when)
        store.notification(
            "TRANSACTION_COMPLETED",
            treasury,
            amount,
            transfer=transfer,
            receipt=receipt,
            occurred=when,
        )
    store.transfer(
        treasury, carol, 10_000_000_000, status="reservation_denied", requested=at(next(clock))
    )
    stuck = store.transfer(
        treasury, carol, 5_000, status="awaiting_finality", requested=at(next(clock))
    )
    assert altered is not None
    return DemoDay(
        treasury=treasury,
        alice=alice,
        bob=bob,
        carol=carol,
        dropped_receipt=dropped.receipt_ref,
        altered_event=altered.event_id,
        stuck_ref=stuck.transfer_ref,
    )


@dataclass(frozen=True)
class Line:
    """One generated happening: its kind, where, how much, how long ago, and (transfers) how
    it ended."""

    kind: str
    holding: int
    other: int
    amount: int
    age: int
    status: str = "completed"


@dataclass(frozen=True)
class Story:
    """A generated store: holdings (locator, currency) and what happened to them."""

    holdings: list[tuple[bool, str]]
    lines: list[Line]
    run_pass: bool
    grace: int
    since_days: int | None
    until_offset: int


@st.composite
def stories(draw: st.DrawFn) -> Story:
    holdings = draw(
        st.lists(
            st.tuples(st.booleans(), st.sampled_from(["NGN", "JPY", "KWD"])),
            min_size=1,
            max_size=3,
        )
    )
    count = len(holdings)
    line = st.builds(
        Line,
        # Transfers weigh more: they come in four outcomes, each needing its examples.
        kind=st.sampled_from(LINE_KINDS + ("transfer",) * 3),
        holding=st.integers(0, count - 1),
        other=st.integers(0, count - 1),
        amount=st.integers(1, 10**12),
        age=st.one_of(st.integers(0, 600), st.integers(0, 40 * DAY)),
        status=st.sampled_from(sorted(OUTCOME_OF_STATUS)),
    )
    return Story(
        holdings=holdings,
        lines=draw(st.lists(line, min_size=1, max_size=12)),
        run_pass=draw(st.booleans()),
        grace=draw(st.sampled_from([60, 300, DAY])),
        since_days=draw(st.one_of(st.none(), st.integers(1, 35))),
        until_offset=draw(st.sampled_from([0, 120, 3 * DAY])),
    )


@dataclass(frozen=True)
class Written:
    """One item a story wrote: its stream, age, holding, reference and (transfers) outcome."""

    stream: str
    age: int
    holding_ref: str
    reference: str
    outcome: str = ""


def build_story(store: Store, story: Story) -> list[Written]:
    """Write the story's rows; return every item written."""
    held = [store.holding(locator=loc, currency=cur) for loc, cur in story.holdings]
    items: list[Written] = []
    for line in story.lines:
        here, there = held[line.holding], held[line.other]
        when = at(-line.age)
        ref = str(here.holding_ref)
        if line.kind == "transfer":
            transfer = store.transfer(here, there, line.amount, status=line.status, requested=when)
            outcome = OUTCOME_OF_STATUS[line.status]
            items.append(Written("transfer", line.age, ref, str(transfer.transfer_ref), outcome))
            if line.status == "completed":
                _, _, receipt = store.settle(transfer, here, there, posted=when)
                items.append(Written("posting", line.age, ref, str(receipt)))
                items.append(Written("posting", line.age, str(there.holding_ref), str(receipt)))
                note = store.notification(
                    "TRANSACTION_COMPLETED",
                    here,
                    line.amount,
                    transfer=transfer,
                    receipt=receipt,
                    occurred=when,
                )
                items.append(Written("notification", line.age, ref, note.event_id))
            elif line.status == "failed":
                note = store.notification(
                    "TRANSACTION_FAILED", here, line.amount, transfer=transfer, occurred=when
                )
                items.append(Written("notification", line.age, ref, note.event_id))
            continue
        if line.kind != "phantom":
            posting = store.posting(here, line.amount, posted=when)
            items.append(Written("posting", line.age, ref, str(posting.receipt_ref)))
            receipt = posting.receipt_ref
        else:
            receipt = uuid.uuid4()
        notes = {"credit_silent": 0, "duplicate": 2}.get(line.kind, 1)
        claimed = line.amount + 1 if line.kind == "altered" else line.amount
        for _ in range(notes):
            note = store.notification(
                "PAYMENT_RECEIVED", here, claimed, receipt=receipt, occurred=when
            )
            items.append(Written("notification", line.age, ref, note.event_id))
    return items
