"""Receiving endpoints: provision one for an owner and value unit; resolve the current one."""

from __future__ import annotations

from uuid import UUID

import msgspec

from upstream.wire.common import ValueUnit


class ReceivingRequest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Material of a receiving endpoint creation."""

    owner_ref: UUID
    owner_kind: str
    value_unit: ValueUnit

    def to_wire(self) -> dict[str, object]:
        """The request body."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


class Activation(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A provisioned receiving endpoint (`activation.value`)."""

    activation_ref: UUID
    account_ref: UUID
    endpoint_ref: UUID
    holding_refs: tuple[UUID, ...] = ()
    owner_ref: UUID | None = None
    owner_kind: str | None = None
    capability_ref: UUID | None = None
    value_unit: ValueUnit | None = None
    request_evidence_ref: str | None = None
    readiness_receipt_ref: UUID | None = None
    idempotency_key: str | None = None


class ReceivingResource(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The `resource` half of the current receiving endpoint."""

    endpoint_ref: UUID
    activation_ref: UUID | None = None
    owner_ref: UUID | None = None
    owner_kind: str | None = None
    capability_ref: UUID | None = None
    holding_units: tuple[ValueUnit, ...] = ()
    availability: str | None = None
    freshness: str | None = None


class ReceivingAccount(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The `account` half of the current receiving endpoint."""

    account_ref: UUID
    owner_ref: UUID | None = None
    owner_kind: str | None = None
    endpoint_ref: UUID | None = None
    holding_refs: tuple[UUID, ...] = ()


class CurrentReceiving(msgspec.Struct, frozen=True, kw_only=True):
    """The current receiving endpoint for an owner and value unit."""

    resource: ReceivingResource
    account: ReceivingAccount
