"""Transfers: the create request, the three outcomes of creating, status, and quotes.

Creating a transfer has three normal outcomes and none of them is an exception: accepted (the
principal is reserved), denied (`ReservationDenied`, a business outcome) and replayed (the same
Idempotency-Key and material were seen before; nothing moved twice). Callers `match` on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec

from upstream.wire.common import (
    Destination,
    HoldingAddress,
    ValueUnit,
    parse_destination,
    parse_value_unit,
)
from upstream.wire.evidence import Evidence
from upstream.wire.reader import Fields, format_minor_units

#: The operation name a transfer create's Idempotency-Key is recorded under.
TRANSFER_CREATE: Final = "transfer.create"


class Stage:
    """The two transfer stages the spec shows, both answers to create.

    Stages after reservation are not shown, and the status read carries none: recon never
    guesses their names. Whether a transfer is done, and whether it succeeded, comes only from
    the status read's `isTerminal` and `isSuccessful`; every name is stored as the gateway
    sent it.
    """

    PRINCIPAL_RESERVED = "PrincipalReserved"
    RESERVATION_DENIED = "ReservationDenied"


class Status:
    """The status-read values the spec shows, each paired with the stage that shows it."""

    AWAITING_FINALITY = "awaiting_finality"
    RESERVATION_DENIED = "reservation_denied"


#: Stage implied by a status, for the pairs the spec itself shows (the status read has no
#: stage member). Any other status implies nothing: its stage is not known.
SHOWN_STAGE_OF_STATUS: Final[dict[str, str]] = {
    Status.AWAITING_FINALITY: Stage.PRINCIPAL_RESERVED,
    Status.RESERVATION_DENIED: Stage.RESERVATION_DENIED,
}


class TransferRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The material of a transfer (also of a quote): from where, to where, what, how much.

    `fee_instruction` is passed through as given: its inner field names are not shown.
    """

    source: HoldingAddress
    destination: Destination
    value_unit: ValueUnit
    amount_minor_units: int
    fee_instruction: Mapping[str, Any] | None = None

    def to_wire(self, accepted_quote: Mapping[str, Any] | None = None) -> dict[str, object]:
        """The request body, amounts as digit strings and refs as strings."""
        body: dict[str, object] = {
            "sourceAccountRef": str(self.source.account_ref),
            "sourceEndpointRef": str(self.source.endpoint_ref),
            "sourceHoldingRef": str(self.source.holding_ref),
            "destination": self.destination.to_wire(),
            "valueUnit": self.value_unit.to_wire(),
            "amountMinorUnits": format_minor_units(self.amount_minor_units, "amount_minor_units"),
        }
        if self.fee_instruction is not None:
            body["feeInstruction"] = dict(self.fee_instruction)
        if accepted_quote is not None:
            body["acceptedQuote"] = dict(accepted_quote)
        return body


def _source(f: Fields) -> HoldingAddress:
    return HoldingAddress(
        account_ref=f.ref("sourceAccountRef"),
        endpoint_ref=f.ref("sourceEndpointRef"),
        holding_ref=f.ref("sourceHoldingRef"),
    )


class Transfer(msgspec.Struct, frozen=True, kw_only=True):
    """A transfer record as the gateway returns it on creation."""

    transfer_ref: UUID
    stage: str
    revision: int
    requested_at: datetime
    decided_at: datetime | None
    source: HoldingAddress
    destination: Destination
    value_unit: ValueUnit
    amount_minor_units: int
    requested_by: UUID | None
    material_fingerprint: str | None
    denial_reason: str | None = None


def parse_transfer(f: Fields) -> Transfer:
    """Read `transfer.value`."""
    return Transfer(
        transfer_ref=f.ref("transferRef"),
        stage=f.text("stage"),
        revision=f.integer("revision"),
        requested_at=f.timestamp("requestedAt"),
        decided_at=f.opt_timestamp("decidedAt"),
        source=_source(f),
        destination=parse_destination(f.obj("destination")),
        value_unit=parse_value_unit(f.obj("valueUnit")),
        amount_minor_units=f.amount("amountMinorUnits"),
        requested_by=f.opt_ref("requestedBy"),
        material_fingerprint=f.opt_text("materialFingerprint"),
        denial_reason=f.opt_text("denialReason"),
    )


class Replay(msgspec.Struct, frozen=True, kw_only=True):
    """The gateway's answer to a replayed create: which intake and transfer it already has."""

    intake_ref: str
    envelope_ref: UUID | None
    occurrence: str
    transfer_ref: UUID


def parse_replay(f: Fields) -> Replay:
    """Read `body.replay`."""
    return Replay(
        intake_ref=f.text("intakeRef"),
        envelope_ref=f.opt_ref("envelopeRef"),
        occurrence=f.text("occurrence"),
        transfer_ref=f.ref("transferRef"),
    )


class _TransferAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What an accepted and a denied create both carry: the transfer the gateway recorded."""

    transfer: Transfer
    idempotency_key: UUID
    http_status: int
    evidence: tuple[Evidence, ...]

    @property
    def transfer_ref(self) -> UUID:
        """The transfer's reference (the gateway records denials too)."""
        return self.transfer.transfer_ref


class TransferAccepted(_TransferAnswer, frozen=True, kw_only=True):
    """Create answered 202: the principal is reserved; watch the status for finality."""


class TransferDenied(_TransferAnswer, frozen=True, kw_only=True):
    """Create answered `ReservationDenied`: a business outcome (e.g. insufficient balance)."""

    @property
    def reason(self) -> str | None:
        """The gateway's `denialReason`, e.g. `InsufficientAvailableBalance`."""
        return self.transfer.denial_reason


class TransferReplayed(msgspec.Struct, frozen=True, kw_only=True):
    """Create answered with `body.replay`: this key and material were already taken in."""

    replay: Replay
    idempotency_key: UUID
    http_status: int
    evidence: tuple[Evidence, ...]

    @property
    def transfer_ref(self) -> UUID:
        """The transfer the earlier, identical request created."""
        return self.replay.transfer_ref


TransferCreation = TransferAccepted | TransferDenied | TransferReplayed


class Fees(msgspec.Struct, frozen=True, kw_only=True):
    """Fee state of a transfer; element shapes of `totals` and `lines` are not shown."""

    status: str
    reason: str | None
    totals: tuple[object, ...]
    lines: tuple[object, ...]


class TransferStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The status read: where a transfer is and whether it is done.

    `status` and `reason` are the gateway's words, kept verbatim; only `is_terminal` and
    `is_successful` carry meaning. `stage` is read when a provider adds one (the spec's status
    read has none).
    """

    transfer_ref: UUID
    status: str
    reason: str | None
    is_terminal: bool
    is_successful: bool
    revision: int
    fees: Fees | None
    stage: str | None = None

    @property
    def implied_stage(self) -> str | None:
        """The stage as the gateway named it, or as the spec pairs it with this status."""
        return self.stage or SHOWN_STAGE_OF_STATUS.get(self.status)


def parse_transfer_status(f: Fields) -> TransferStatus:
    """Read the status value."""
    fees_f = f.opt_obj("fees")
    fees = (
        Fees(
            status=fees_f.text("status"),
            reason=fees_f.opt_text("reason"),
            totals=fees_f.opaque("totals"),
            lines=fees_f.opaque("lines"),
        )
        if fees_f is not None
        else None
    )
    return TransferStatus(
        transfer_ref=f.ref("transferRef"),
        status=f.text("status"),
        reason=f.opt_text("reason"),
        is_terminal=f.flag("isTerminal"),
        is_successful=f.flag("isSuccessful"),
        revision=f.integer("revision"),
        fees=fees,
        stage=f.opt_text("stage"),
    )


class Quote(msgspec.Struct, frozen=True, kw_only=True):
    """A quote: fees and totals for a transfer's material, reserving nothing.

    `wire` keeps the quote exactly as received, to pass back as `acceptedQuote` on create
    (whose inner field names the spec does not show).
    """

    quote_basis_transfer_ref: UUID
    operation_id: UUID | None
    source: HoldingAddress
    destination: Destination
    value_unit: ValueUnit
    amount_minor_units: int
    requested_at: datetime | None
    observed_at: datetime | None
    no_fee_reason: str | None
    totals: tuple[object, ...]
    lines: tuple[object, ...]
    external_cost_evidence: tuple[object, ...]
    wire: dict[str, object]


def parse_quote(f: Fields) -> Quote:
    """Read the quote value, keeping it as decoded too (for `acceptedQuote`)."""
    return Quote(
        quote_basis_transfer_ref=f.ref("quoteBasisTransferRef"),
        operation_id=f.opt_ref("operationId"),
        source=_source(f),
        destination=parse_destination(f.obj("destination")),
        value_unit=parse_value_unit(f.obj("valueUnit")),
        amount_minor_units=f.amount("amountMinorUnits"),
        requested_at=f.opt_timestamp("requestedAt"),
        observed_at=f.opt_timestamp("observedAt"),
        no_fee_reason=f.opt_text("noFeeReason"),
        totals=f.opaque("totals"),
        lines=f.opaque("lines"),
        external_cost_evidence=f.opaque("externalCostEvidence"),
        wire=f.as_dict(),
    )
