"""Balances: snapshots, committed postings (activity entries), and the sandbox inbound credit."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import msgspec

from upstream.errors import ProtocolError
from upstream.wire.common import HoldingAddress, ValueUnit
from upstream.wire.decoding import MinorUnits, Timestamp, decode, format_minor_units


class HoldingBalance(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One holding's balance in int minor units, with the projections behind it."""

    holding_ref: UUID
    value_unit: ValueUnit
    settled_minor_units: MinorUnits
    available_minor_units: MinorUnits
    active_reserved_minor_units: MinorUnits
    settled_projection_ref: UUID | None = None
    available_projection_ref: UUID | None = None
    active_reservation_refs: tuple[UUID, ...] = ()
    projection_state: str | None = None


class BalanceSnapshot(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A point-in-time balance read for an endpoint (optionally one holding)."""

    account_ref: UUID
    endpoint_ref: UUID
    holding_balances: tuple[HoldingBalance, ...]
    projection_state: str | None = None


class Posting(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """One committed ledger posting behind a balance (an activity entry).

    Not tracked by the garbage collector (`gc=False`): its fields are immutable scalars and a
    frozen ValueUnit, so it can sit in no reference cycle, and a catch-up makes a million.
    """

    posted_at: Timestamp
    receipt_ref: UUID
    journal_ref: UUID
    line_ref: UUID
    journal_kind: str
    posting_side: str
    balance_effect: str
    amount_minor_units: MinorUnits
    value_unit: ValueUnit
    ledger_partition: str | None = None
    ledger_normal_side: str | None = None


def parse_postings(items: Sequence[object], path: str) -> tuple[Posting, ...]:
    """Read a page's entries (`path` names the array) in one msgspec call: the catch-up's hot
    path (a million entries).

    Entries of one unit share one ValueUnit object, so the store names its code once per page.
    An error names the entry's `lineRef` when it has one, so whoever reads the poller's alert
    can find the very line at the provider.
    """
    try:
        postings = decode(items, tuple[Posting, ...], path)
    except ProtocolError:
        for i, item in enumerate(items):
            try:
                decode(item, Posting, f"{path}[{i}]")
            except ProtocolError as bad:
                line = item.get("lineRef") if isinstance(item, dict) else None
                if not isinstance(line, str):
                    raise
                raise ProtocolError(f"{bad.message} (the entry with lineRef {line[:64]})") from bad
        raise
    units: dict[ValueUnit, ValueUnit] = {}
    for posting in postings:
        unit = units.setdefault(posting.value_unit, posting.value_unit)
        if unit is not posting.value_unit:
            msgspec.structs.force_setattr(posting, "value_unit", unit)
    return postings


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


class Simulation(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An accepted inbound credit simulation (`simulation.value`); its posting is projected
    afterwards. `accounts_posting_receipt_ref` equals the `receiptRef` of the posting it
    produces.
    """

    simulation_ref: UUID
    stage: str
    target_account_ref: UUID
    target_endpoint_ref: UUID
    target_holding_ref: UUID
    value_unit: ValueUnit
    amount_minor_units: MinorUnits
    accepted_at: Timestamp | None = None
    revision: int | None = None
    material_fingerprint: str | None = None
    requested_by: UUID | None = None
    accounts_posting_receipt_ref: UUID | None = None
    event_receipt_refs: tuple[UUID, ...] = ()

    @property
    def target(self) -> HoldingAddress:
        """The holding credited."""
        return HoldingAddress(
            account_ref=self.target_account_ref,
            endpoint_ref=self.target_endpoint_ref,
            holding_ref=self.target_holding_ref,
        )
