"""Balances: snapshots, committed postings (activity entries), and the sandbox inbound credit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import msgspec

from foundation.money import MAX_AMOUNT_DIGITS
from upstream.errors import ProtocolError
from upstream.wire.common import HoldingAddress, ValueUnit, parse_value_unit
from upstream.wire.reader import Fields, format_minor_units


class HoldingBalance(msgspec.Struct, frozen=True, kw_only=True):
    """One holding's balance in int minor units, with the projections behind it."""

    holding_ref: UUID
    value_unit: ValueUnit
    settled_minor_units: int
    available_minor_units: int
    active_reserved_minor_units: int
    settled_projection_ref: UUID | None
    available_projection_ref: UUID | None
    active_reservation_refs: tuple[UUID, ...]
    projection_state: str | None


class BalanceSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A point-in-time balance read for an endpoint (optionally one holding)."""

    account_ref: UUID
    endpoint_ref: UUID
    holding_balances: tuple[HoldingBalance, ...]
    projection_state: str | None


def parse_balance(f: Fields) -> BalanceSnapshot:
    """Read the balance snapshot value."""
    return BalanceSnapshot(
        account_ref=f.ref("accountRef"),
        endpoint_ref=f.ref("endpointRef"),
        holding_balances=tuple(
            HoldingBalance(
                holding_ref=h.ref("holdingRef"),
                value_unit=parse_value_unit(h.obj("valueUnit")),
                settled_minor_units=h.amount("settledMinorUnits"),
                available_minor_units=h.amount("availableMinorUnits"),
                active_reserved_minor_units=h.amount("activeReservedMinorUnits"),
                settled_projection_ref=h.opt_ref("settledProjectionRef"),
                available_projection_ref=h.opt_ref("availableProjectionRef"),
                active_reservation_refs=(h.opt_refs("activeReservationRefs")),
                projection_state=h.opt_text("projectionState"),
            )
            for h in f.objs("holdingBalances")
        ),
        projection_state=f.opt_text("projectionState"),
    )


class Posting(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One committed ledger posting behind a balance (an activity entry).

    Not tracked by the garbage collector (`gc=False`): its fields are immutable scalars and a
    frozen ValueUnit, so it can sit in no reference cycle, and a catch-up makes a million.
    """

    posted_at: datetime
    receipt_ref: UUID
    journal_ref: UUID
    line_ref: UUID
    journal_kind: str
    posting_side: str
    balance_effect: str
    amount_minor_units: int
    value_unit: ValueUnit
    ledger_partition: str | None
    ledger_normal_side: str | None


def parse_posting(f: Fields) -> Posting:
    """Read one activity entry."""
    return Posting(
        posted_at=f.timestamp("postedAt"),
        receipt_ref=f.ref("receiptRef"),
        journal_ref=f.ref("journalRef"),
        line_ref=f.ref("lineRef"),
        journal_kind=f.text("journalKind"),
        posting_side=f.text("postingSide"),
        balance_effect=f.text("balanceEffect"),
        amount_minor_units=f.amount("amountMinorUnits"),
        value_unit=parse_value_unit(f.obj("valueUnit")),
        ledger_partition=f.opt_text("ledgerPartition"),
        ledger_normal_side=f.opt_text("ledgerNormalSide"),
    )


class _WireValueUnit(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """`valueUnit` as `parse_value_unit` reads it, checked by msgspec in C."""

    kind: str
    currency: str | None = None
    asset: str | None = None
    network: str | None = None
    instrument_ref: str | None = None


class _WireEntry(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """One activity entry as `parse_posting` reads it, checked by msgspec in C.

    Every field accepts at most what the `Fields` reader accepts, and converts to the same
    value: msgspec's UUIDs are a subset of `UUID()`'s spellings. The amount stays a string
    here and `_postings_fast` checks it is what the reader's pattern takes (ASCII digits, at
    least one) with two C string methods: a third of what a msgspec pattern constraint costs,
    which calls back into `re` for every entry. `postedAt` stays a string here and goes
    through `datetime.fromisoformat` like the reader's, because msgspec's own timestamp
    parser rounds beyond microseconds and accepts a lower-case `t`/`z` that the reader
    refuses.
    """

    posted_at: str
    receipt_ref: UUID
    journal_ref: UUID
    line_ref: UUID
    journal_kind: str
    posting_side: str
    balance_effect: str
    amount_minor_units: str
    value_unit: _WireValueUnit
    ledger_partition: str | None = None
    ledger_normal_side: str | None = None


def parse_postings(items: Sequence[object], path: str) -> tuple[Posting, ...]:
    """Read a page's entries (`path` names the array); same result and errors as `parse_posting`.

    This is the catch-up's hot path (a million entries), so the checks run in msgspec's C
    validator and each entry costs one Posting and no per-field Python calls. Anything that
    path refuses is read again entry by entry with `parse_posting`, which either names the
    exact bad field in its ProtocolError or, for a spelling only the reader accepts, reads it.
    """
    fast = _postings_fast(items)
    if fast is not None:
        return fast
    return tuple(_entry(item, f"{path}[{i}]") for i, item in enumerate(items))


def _entry(item: object, where: str) -> Posting:
    """One entry read by the reader; its error names the entry's `lineRef` when it has one, so
    whoever reads the poller's alert can find the very line at the provider."""
    try:
        return parse_posting(Fields(item, where))
    except ProtocolError as exc:
        line = item.get("lineRef") if isinstance(item, dict) else None
        if not isinstance(line, str):
            raise
        raise ProtocolError(f"{exc.message} (the entry with lineRef {line[:64]})") from exc


def _postings_fast(items: Sequence[object]) -> tuple[Posting, ...] | None:
    """The entries read in bulk, or None when anything would need the reader's error message."""
    try:
        wire = msgspec.convert(items, list[_WireEntry])
    except msgspec.ValidationError:
        return None
    units: dict[_WireValueUnit, ValueUnit] = {}
    out: list[Posting] = []
    append = out.append
    parse_time = datetime.fromisoformat
    for e in wire:
        amount = e.amount_minor_units
        # Exactly `^[0-9]+$`: isdigit() alone also takes other scripts' digits.
        if not (amount.isascii() and amount.isdigit()) or len(amount) > MAX_AMOUNT_DIGITS:
            return None
        try:
            posted = parse_time(e.posted_at)
        except ValueError:
            return None
        # The reader's "no time zone" check: `fromisoformat` gives a fixed `timezone` or none,
        # and a fixed one always has an offset, so `utcoffset()` (a call and a timedelta per
        # entry, five times the cost of the attribute) could not say anything `tzinfo` does not.
        if posted.tzinfo is None:
            return None
        unit = units.get(e.value_unit)
        if unit is None:
            w = e.value_unit
            unit = units[w] = ValueUnit(
                kind=w.kind,
                currency=w.currency,
                asset=w.asset,
                network=w.network,
                instrument_ref=w.instrument_ref,
            )
        append(
            Posting(
                posted_at=posted,
                receipt_ref=e.receipt_ref,
                journal_ref=e.journal_ref,
                line_ref=e.line_ref,
                journal_kind=e.journal_kind,
                posting_side=e.posting_side,
                balance_effect=e.balance_effect,
                amount_minor_units=int(amount),
                value_unit=unit,
                ledger_partition=e.ledger_partition,
                ledger_normal_side=e.ledger_normal_side,
            )
        )
    return tuple(out)


class CreditRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Material of a sandbox inbound credit simulation."""

    target: HoldingAddress
    value_unit: ValueUnit
    amount_minor_units: int

    def to_wire(self) -> dict[str, object]:
        """The request body."""
        return {
            "accountRef": str(self.target.account_ref),
            "endpointRef": str(self.target.endpoint_ref),
            "holdingRef": str(self.target.holding_ref),
            "valueUnit": self.value_unit.to_wire(),
            "amountMinorUnits": format_minor_units(self.amount_minor_units, "amount_minor_units"),
        }


class Simulation(msgspec.Struct, frozen=True, kw_only=True):
    """An accepted inbound credit simulation; its posting is projected afterwards.

    `accounts_posting_receipt_ref` equals the `receiptRef` of the posting it produces.
    """

    simulation_ref: UUID
    accepted_at: datetime | None
    stage: str
    revision: int | None
    material_fingerprint: str | None
    target: HoldingAddress
    value_unit: ValueUnit
    amount_minor_units: int
    requested_by: UUID | None
    accounts_posting_receipt_ref: UUID | None
    event_receipt_refs: tuple[UUID, ...]


def parse_simulation(f: Fields) -> Simulation:
    """Read `simulation.value`."""
    return Simulation(
        simulation_ref=f.ref("simulationRef"),
        accepted_at=f.opt_timestamp("acceptedAt"),
        stage=f.text("stage"),
        revision=f.opt_integer("revision"),
        material_fingerprint=f.opt_text("materialFingerprint"),
        target=HoldingAddress(
            account_ref=f.ref("targetAccountRef"),
            endpoint_ref=f.ref("targetEndpointRef"),
            holding_ref=f.ref("targetHoldingRef"),
        ),
        value_unit=parse_value_unit(f.obj("valueUnit")),
        amount_minor_units=f.amount("amountMinorUnits"),
        requested_by=f.opt_ref("requestedBy"),
        accounts_posting_receipt_ref=f.opt_ref("accountsPostingReceiptRef"),
        event_receipt_refs=f.opt_refs("eventReceiptRefs"),
    )
