"""Receiving endpoints: provision one for an owner and value unit; resolve the current one."""

from __future__ import annotations

from uuid import UUID

import msgspec

from upstream.wire.common import ValueUnit, parse_value_unit
from upstream.wire.reader import Fields


class ReceivingRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Material of a receiving endpoint creation."""

    owner_ref: UUID
    owner_kind: str
    value_unit: ValueUnit

    def to_wire(self) -> dict[str, object]:
        """The request body."""
        return {
            "ownerRef": str(self.owner_ref),
            "ownerKind": self.owner_kind,
            "valueUnit": self.value_unit.to_wire(),
        }


class Activation(msgspec.Struct, frozen=True, kw_only=True):
    """A provisioned receiving endpoint (`activation.value`)."""

    activation_ref: UUID
    account_ref: UUID
    endpoint_ref: UUID
    holding_refs: tuple[UUID, ...]
    owner_ref: UUID | None
    owner_kind: str | None
    capability_ref: UUID | None
    value_unit: ValueUnit | None
    request_evidence_ref: str | None
    readiness_receipt_ref: UUID | None
    idempotency_key: str | None


def parse_activation(f: Fields) -> Activation:
    """Read `activation.value`."""
    unit = f.opt_obj("valueUnit")
    return Activation(
        activation_ref=f.ref("activationRef"),
        account_ref=f.ref("accountRef"),
        endpoint_ref=f.ref("endpointRef"),
        holding_refs=f.opt_refs("holdingRefs"),
        owner_ref=f.opt_ref("ownerRef"),
        owner_kind=f.opt_text("ownerKind"),
        capability_ref=f.opt_ref("capabilityRef"),
        value_unit=parse_value_unit(unit) if unit is not None else None,
        request_evidence_ref=f.opt_text("requestEvidenceRef"),
        readiness_receipt_ref=f.opt_ref("readinessReceiptRef"),
        idempotency_key=f.opt_text("idempotencyKey"),
    )


class ReceivingResource(msgspec.Struct, frozen=True, kw_only=True):
    """The `resource` half of the current receiving endpoint."""

    activation_ref: UUID | None
    endpoint_ref: UUID
    owner_ref: UUID | None
    owner_kind: str | None
    capability_ref: UUID | None
    holding_units: tuple[ValueUnit, ...]
    availability: str | None
    freshness: str | None


class ReceivingAccount(msgspec.Struct, frozen=True, kw_only=True):
    """The `account` half of the current receiving endpoint."""

    account_ref: UUID
    owner_ref: UUID | None
    owner_kind: str | None
    endpoint_ref: UUID | None
    holding_refs: tuple[UUID, ...]


class CurrentReceiving(msgspec.Struct, frozen=True, kw_only=True):
    """The current receiving endpoint for an owner and value unit."""

    resource: ReceivingResource
    account: ReceivingAccount


def parse_current_receiving(f: Fields) -> CurrentReceiving:
    """Read the current receiving endpoint value."""
    res = f.obj("resource")
    acc = f.obj("account")
    return CurrentReceiving(
        resource=ReceivingResource(
            activation_ref=res.opt_ref("activationRef"),
            endpoint_ref=res.ref("endpointRef"),
            owner_ref=res.opt_ref("ownerRef"),
            owner_kind=res.opt_text("ownerKind"),
            capability_ref=res.opt_ref("capabilityRef"),
            holding_units=tuple(parse_value_unit(u) for u in res.opt_objs("holdingUnits")),
            availability=res.opt_text("availability"),
            freshness=res.opt_text("freshness"),
        ),
        account=ReceivingAccount(
            account_ref=acc.ref("accountRef"),
            owner_ref=acc.opt_ref("ownerRef"),
            owner_kind=acc.opt_text("ownerKind"),
            endpoint_ref=acc.opt_ref("endpointRef"),
            holding_refs=acc.opt_refs("holdingRefs"),
        ),
    )
