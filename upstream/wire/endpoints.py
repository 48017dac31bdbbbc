"""Programmable endpoints: create, list rows, read, readiness, lifecycle suspend/resume.

Shapes the spec does not show (threshold and transient programs and their lifecycles) are
kept as decoded so that reading never fails on them and an operator can still see them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import msgspec

from upstream.wire.common import ValueUnit


class _Wire(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Read camelCase from the wire, every member named."""


class CapabilityPosture(_Wire, frozen=True, kw_only=True):
    """What an endpoint may do, one value per dimension (None when not reported)."""

    receive: str | None = None
    send: str | None = None
    lifecycle: str | None = None
    drain: str | None = None
    backing: str | None = None
    purpose: str | None = None
    gas: str | None = None
    liquidity: str | None = None


class Locator(_Wire, frozen=True, kw_only=True):
    """An external address of an endpoint, e.g. a Nigerian bank account number."""

    locator_ref: UUID
    form: str
    display: str

    @property
    def account_number(self) -> str | None:
        """The account number of a `nigerian_bank_account` display `<bank>:<number>:<name>`."""
        parts = self.display.split(":", 2)
        return parts[1] if self.form == "nigerian_bank_account" and len(parts) == 3 else None

    @property
    def bank_code(self) -> str | None:
        """The bank code of a `nigerian_bank_account` display."""
        parts = self.display.split(":", 2)
        return parts[0] if self.form == "nigerian_bank_account" and len(parts) == 3 else None


class LifecycleGuard(_Wire, frozen=True, kw_only=True):
    """Concurrency evidence for lifecycle commands: the state version and its fingerprint."""

    state_version: int
    fingerprint: str

    def to_wire(self) -> dict[str, object]:
        """The request form, exactly as read."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


class Endpoint(_Wire, frozen=True, kw_only=True):
    """A programmable endpoint: refs, owner, unit, posture, locators and (on read) its guard.

    Its unit is read from `unit`, else from `valueUnit` (answers differ in which they use).
    """

    template: str
    account_ref: UUID
    endpoint_ref: UUID
    holding_ref: UUID | None = None
    owner_ref: UUID | None = None
    owner_kind: str | None = None
    unit: ValueUnit | None = None
    value_unit: ValueUnit | None = None
    ledger_partition: str | None = None
    ledger_normal_side: str | None = None
    capability_posture: CapabilityPosture = CapabilityPosture()
    collection_ref: UUID | None = None
    parent_endpoint_ref: UUID | None = None
    locators: tuple[Locator, ...] = ()
    lifecycle_guard: LifecycleGuard | None = None

    def __post_init__(self) -> None:
        if self.unit is None:
            msgspec.structs.force_setattr(self, "unit", self.value_unit)


class EndpointRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Material of a programmable endpoint creation. Programs are passed through as given."""

    template: str
    owner_ref: UUID
    owner_kind: str
    value_unit: ValueUnit
    threshold_program: Mapping[str, Any] | None = None
    transient_program: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, object]:
        """The request body; derived fields (provider refs, locators, ...) are never sent."""
        body: dict[str, object] = {
            "template": self.template,
            "owner": {
                "kind": "existing_account_owner",
                "ownerRef": str(self.owner_ref),
                "ownerKind": self.owner_kind,
            },
            "valueUnit": self.value_unit.to_wire(),
        }
        if self.threshold_program is not None:
            body["thresholdProgram"] = dict(self.threshold_program)
        if self.transient_program is not None:
            body["transientProgram"] = dict(self.transient_program)
        return body


class EndpointCommand(_Wire, frozen=True, kw_only=True):
    """`body.command` of an endpoint write: how the gateway took the command in."""

    occurrence: str | None = None
    provisioning_status: str | None = None
    lifecycle_status: str | None = None
    replayed: bool | None = None


class EndpointCreated(msgspec.Struct, frozen=True, kw_only=True):
    """Create's answer: the command outcome and the new endpoint."""

    occurrence: str | None
    provisioning_status: str | None
    endpoint: Endpoint


class Scope(_Wire, frozen=True, kw_only=True):
    """Which organisation, app and environment an answer is about (the members that wrap
    endpoint answers)."""

    organisation_ref: UUID | None = None
    app_ref: UUID | None = None
    environment_ref: UUID | None = None


class Lineage(_Wire, frozen=True, kw_only=True):
    """The endpoints an endpoint replaced and was replaced by."""

    predecessor_endpoint_ref: UUID | None = None
    successor_endpoint_ref: UUID | None = None


class EndpointFound(_Wire, frozen=True, kw_only=True):
    """`result` of an endpoint read: `kind` is `found`, `not_found` or
    `not_programmable_endpoint`."""

    kind: str
    endpoint: Endpoint | None = None
    replacement_lineage: Lineage | None = None
    threshold_settlement_lifecycle: Any = None
    transient_drain_lifecycle: Any = None


class EndpointRead(Scope, frozen=True, kw_only=True):
    """An endpoint read: the scope and its `result`."""

    result: EndpointFound

    @property
    def kind(self) -> str:
        """`found`, `not_found` or `not_programmable_endpoint`."""
        return self.result.kind

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint, when found."""
        return self.result.endpoint

    @property
    def found(self) -> bool:
        """True when the endpoint exists and is programmable."""
        return self.kind == "found" and self.endpoint is not None


class LocatorSummary(_Wire, frozen=True, kw_only=True):
    """`locator_forms` with a count and forms, or `no_locator`."""

    kind: str
    count: int | None = None
    forms: tuple[str, ...] = ()


class EndpointRow(_Wire, frozen=True, kw_only=True):
    """One row of the endpoint register (the list)."""

    family: str
    account_ref: UUID
    endpoint_ref: UUID
    owner_ref: UUID | None = None
    owner_kind: str | None = None
    unit: ValueUnit | None = None
    capability_posture: CapabilityPosture = CapabilityPosture()
    locator_summary: LocatorSummary | None = None


class EndpointPage(Scope, frozen=True, kw_only=True):
    """One page of the register; the next is asked for after the last row's endpointRef."""

    rows: tuple[EndpointRow, ...]


class OperationFamily(_Wire, frozen=True, kw_only=True):
    """Readiness of one family of operations (`receive_funds`, `send_funds`, ...)."""

    family: str
    status: str
    reason_codes: tuple[str, ...] = ()


class Readiness(_Wire, frozen=True, kw_only=True):
    """Effective operation readiness (`result` inside the scope wrapper, or bare): explains
    posture, reserves nothing."""

    kind: str
    endpoint: Endpoint | None = None
    operation_families: tuple[OperationFamily, ...] = ()


class ScopedReadiness(Scope, frozen=True, kw_only=True):
    """The readiness value inside the scope wrapper (`result`); None when it came bare."""

    result: Readiness | None = None


class LifecycleApplied(_Wire, frozen=True, kw_only=True):
    """A lifecycle command's outcome (`result.applied`): postures and guards before and after.

    `kind` (the result's), `occurrence`, `lifecycle_status` and `replayed` (the command's) are
    set by the client from the members beside it.
    """

    endpoint_ref: UUID | None = None
    previous_posture: str | None = None
    current_posture: str | None = None
    previous_state_version: int | None = None
    current_state_version: int | None = None
    lifecycle_guard: LifecycleGuard | None = None
    reason: str | None = None
    kind: str = ""
    occurrence: str | None = None
    lifecycle_status: str | None = None
    replayed: bool = False


class LifecycleResult(_Wire, frozen=True, kw_only=True):
    """`body.endpoint.value.result` of a lifecycle answer."""

    kind: str
    applied: LifecycleApplied | None = None


class LifecycleAnswer(Scope, frozen=True, kw_only=True):
    """`body.endpoint.value` of a lifecycle answer."""

    result: LifecycleResult
