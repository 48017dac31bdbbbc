"""Transfers: the create request, the three outcomes of creating, status, and quotes.

Creating a transfer has three normal outcomes and none of them is an exception: accepted (the
principal is reserved), denied (`ReservationDenied`, a business outcome) and replayed (the same
Idempotency-Key and material were seen before; nothing moved twice). Callers `match` on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from uuid import UUID

import msgspec

from upstream.wire.common import Destination, HoldingAddress, ValueUnit
from upstream.wire.decoding import MinorUnits, Timestamp, format_minor_units
from upstream.wire.evidence import Evidence

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


class _FromSource(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The material a transfer and a quote are answered with, the source named flat on the wire."""

    source_account_ref: UUID
    source_endpoint_ref: UUID
    source_holding_ref: UUID
    destination: Destination
    value_unit: ValueUnit
    amount_minor_units: MinorUnits

    @property
    def source(self) -> HoldingAddress:
        """Where the money comes from."""
        return HoldingAddress(
            account_ref=self.source_account_ref,
            endpoint_ref=self.source_endpoint_ref,
            holding_ref=self.source_holding_ref,
        )


class Transfer(_FromSource, frozen=True, kw_only=True):
    """A transfer record as the gateway returns it on creation (`transfer.value`)."""

    transfer_ref: UUID
    stage: str
    revision: int
    requested_at: Timestamp
    decided_at: Timestamp | None = None
    requested_by: UUID | None = None
    material_fingerprint: str | None = None
    denial_reason: str | None = None


class Replay(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The gateway's answer to a replayed create (`body.replay`): which intake and transfer it
    already has."""

    intake_ref: str
    occurrence: str
    transfer_ref: UUID
    envelope_ref: UUID | None = None


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
    """Fee state of a transfer; element shapes of `totals` and `lines` are not shown, so they
    are kept as decoded (upstream.wire.fees reads them)."""

    status: str
    reason: str | None = None
    totals: tuple[Any, ...] = ()
    lines: tuple[Any, ...] = ()


class TransferStatus(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The status read: where a transfer is and whether it is done.

    `status` and `reason` are the gateway's words, kept verbatim; only `is_terminal` and
    `is_successful` carry meaning. `stage` is read when a provider adds one (the spec's status
    read has none).
    """

    transfer_ref: UUID
    status: str
    is_terminal: bool
    is_successful: bool
    revision: int
    reason: str | None = None
    fees: Fees | None = None
    stage: str | None = None

    @property
    def implied_stage(self) -> str | None:
        """The stage as the gateway named it, or as the spec pairs it with this status."""
        return self.stage or SHOWN_STAGE_OF_STATUS.get(self.status)


class Quote(_FromSource, frozen=True, kw_only=True):
    """A quote: fees and totals for a transfer's material, reserving nothing.

    `wire` is not a wire member: it is the quote exactly as received, set by the client, to
    pass back as `acceptedQuote` on create (whose inner field names the spec does not show).
    """

    quote_basis_transfer_ref: UUID
    operation_id: UUID | None = None
    requested_at: Timestamp | None = None
    observed_at: Timestamp | None = None
    no_fee_reason: str | None = None
    totals: tuple[Any, ...] = ()
    lines: tuple[Any, ...] = ()
    external_cost_evidence: tuple[Any, ...] = ()
    wire: dict[str, Any] = {}
