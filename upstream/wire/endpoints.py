"""Programmable endpoints: create, list rows, read, readiness, lifecycle suspend/resume.

Shapes the spec does not show (threshold and transient programs and their lifecycles) are
kept as decoded so that reading never fails on them and an operator can still see them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import msgspec

from upstream.wire.common import ValueUnit, parse_value_unit
from upstream.wire.reader import Fields


class CapabilityPosture(msgspec.Struct, frozen=True, kw_only=True):
    """What an endpoint may do, one value per dimension (None when not reported)."""

    receive: str | None = None
    send: str | None = None
    lifecycle: str | None = None
    drain: str | None = None
    backing: str | None = None
    purpose: str | None = None
    gas: str | None = None
    liquidity: str | None = None


def parse_posture(f: Fields) -> CapabilityPosture:
    """Read `capabilityPosture`."""
    return CapabilityPosture(
        receive=f.opt_text("receive"),
        send=f.opt_text("send"),
        lifecycle=f.opt_text("lifecycle"),
        drain=f.opt_text("drain"),
        backing=f.opt_text("backing"),
        purpose=f.opt_text("purpose"),
        gas=f.opt_text("gas"),
        liquidity=f.opt_text("liquidity"),
    )


class Locator(msgspec.Struct, frozen=True, kw_only=True):
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


class LifecycleGuard(msgspec.Struct, frozen=True, kw_only=True):
    """Concurrency evidence for lifecycle commands: the state version and its fingerprint."""

    state_version: int
    fingerprint: str

    def to_wire(self) -> dict[str, object]:
        """The request form, exactly as read."""
        return {"stateVersion": self.state_version, "fingerprint": self.fingerprint}


def parse_guard(f: Fields) -> LifecycleGuard:
    """Read a `lifecycleGuard`."""
    return LifecycleGuard(
        state_version=f.integer("stateVersion"), fingerprint=f.text("fingerprint")
    )


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """A programmable endpoint: refs, owner, unit, posture, locators and (on read) its guard."""

    template: str
    account_ref: UUID
    endpoint_ref: UUID
    holding_ref: UUID | None
    owner_ref: UUID | None
    owner_kind: str | None
    unit: ValueUnit | None
    ledger_partition: str | None
    ledger_normal_side: str | None
    capability_posture: CapabilityPosture
    collection_ref: UUID | None
    parent_endpoint_ref: UUID | None
    locators: tuple[Locator, ...]
    lifecycle_guard: LifecycleGuard | None


def parse_endpoint(f: Fields) -> Endpoint:
    """Read an endpoint object (create's `endpoint.value` or a read's `result.endpoint`)."""
    unit = f.opt_obj("unit") or f.opt_obj("valueUnit")
    posture = f.opt_obj("capabilityPosture")
    guard = f.opt_obj("lifecycleGuard")
    return Endpoint(
        template=f.text("template"),
        account_ref=f.ref("accountRef"),
        endpoint_ref=f.ref("endpointRef"),
        holding_ref=f.opt_ref("holdingRef"),
        owner_ref=f.opt_ref("ownerRef"),
        owner_kind=f.opt_text("ownerKind"),
        unit=parse_value_unit(unit) if unit is not None else None,
        ledger_partition=f.opt_text("ledgerPartition"),
        ledger_normal_side=f.opt_text("ledgerNormalSide"),
        capability_posture=parse_posture(posture) if posture else CapabilityPosture(),
        collection_ref=f.opt_ref("collectionRef"),
        parent_endpoint_ref=f.opt_ref("parentEndpointRef"),
        locators=tuple(
            Locator(
                locator_ref=loc.ref("locatorRef"),
                form=loc.text("form"),
                display=loc.text("display"),
            )
            for loc in f.opt_objs("locators")
        ),
        lifecycle_guard=parse_guard(guard) if guard is not None else None,
    )


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


class EndpointCreated(msgspec.Struct, frozen=True, kw_only=True):
    """Create's answer: the command outcome and the new endpoint."""

    occurrence: str | None
    provisioning_status: str | None
    endpoint: Endpoint


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """Which organisation, app and environment an answer is about."""

    organisation_ref: UUID | None
    app_ref: UUID | None
    environment_ref: UUID | None


def parse_scope(f: Fields) -> Scope:
    """Read the scope members that wrap endpoint answers."""
    return Scope(
        organisation_ref=f.opt_ref("organisationRef"),
        app_ref=f.opt_ref("appRef"),
        environment_ref=f.opt_ref("environmentRef"),
    )


class EndpointRead(msgspec.Struct, frozen=True, kw_only=True):
    """An endpoint read: `kind` is `found`, `not_found` or `not_programmable_endpoint`."""

    scope: Scope
    kind: str
    endpoint: Endpoint | None
    predecessor_endpoint_ref: UUID | None
    successor_endpoint_ref: UUID | None
    threshold_settlement_lifecycle: object | None
    transient_drain_lifecycle: object | None

    @property
    def found(self) -> bool:
        """True when the endpoint exists and is programmable."""
        return self.kind == "found" and self.endpoint is not None


def parse_endpoint_read(f: Fields) -> EndpointRead:
    """Read the endpoint read value."""
    result = f.obj("result")
    lineage = result.opt_obj("replacementLineage")
    endpoint = result.opt_obj("endpoint")
    return EndpointRead(
        scope=parse_scope(f),
        kind=result.text("kind"),
        endpoint=parse_endpoint(endpoint) if endpoint is not None else None,
        predecessor_endpoint_ref=lineage.opt_ref("predecessorEndpointRef") if lineage else None,
        successor_endpoint_ref=lineage.opt_ref("successorEndpointRef") if lineage else None,
        threshold_settlement_lifecycle=result.opt_raw("thresholdSettlementLifecycle"),
        transient_drain_lifecycle=result.opt_raw("transientDrainLifecycle"),
    )


class LocatorSummary(msgspec.Struct, frozen=True, kw_only=True):
    """`locator_forms` with a count and forms, or `no_locator`."""

    kind: str
    count: int | None
    forms: tuple[str, ...]


class EndpointRow(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the endpoint register (the list)."""

    family: str
    account_ref: UUID
    endpoint_ref: UUID
    owner_ref: UUID | None
    owner_kind: str | None
    unit: ValueUnit | None
    capability_posture: CapabilityPosture
    locator_summary: LocatorSummary | None


def parse_row(f: Fields) -> EndpointRow:
    """Read one register row."""
    unit = f.opt_obj("unit")
    posture = f.opt_obj("capabilityPosture")
    summary = f.opt_obj("locatorSummary")
    return EndpointRow(
        family=f.text("family"),
        account_ref=f.ref("accountRef"),
        endpoint_ref=f.ref("endpointRef"),
        owner_ref=f.opt_ref("ownerRef"),
        owner_kind=f.opt_text("ownerKind"),
        unit=parse_value_unit(unit) if unit is not None else None,
        capability_posture=parse_posture(posture) if posture else CapabilityPosture(),
        locator_summary=(
            LocatorSummary(
                kind=summary.text("kind"),
                count=summary.opt_integer("count"),
                forms=summary.opt_texts("forms"),
            )
            if summary is not None
            else None
        ),
    )


class EndpointPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of the register; the next is asked for after the last row's endpointRef."""

    scope: Scope
    rows: tuple[EndpointRow, ...]


def parse_endpoint_page(f: Fields) -> EndpointPage:
    """Read the list value."""
    return EndpointPage(scope=parse_scope(f), rows=tuple(parse_row(r) for r in f.objs("rows")))


class OperationFamily(msgspec.Struct, frozen=True, kw_only=True):
    """Readiness of one family of operations (`receive_funds`, `send_funds`, ...)."""

    family: str
    status: str
    reason_codes: tuple[str, ...]


class Readiness(msgspec.Struct, frozen=True, kw_only=True):
    """Effective operation readiness: explains posture, reserves nothing."""

    scope: Scope
    kind: str
    endpoint: Endpoint | None
    operation_families: tuple[OperationFamily, ...]


def parse_readiness(f: Fields) -> Readiness:
    """Read the readiness value (`result` inside the scope wrapper, or bare)."""
    result = f.obj("result") if f.has("result") else f
    endpoint = result.opt_obj("endpoint")
    families = result.opt_objs("operationFamilies")
    return Readiness(
        scope=parse_scope(f),
        kind=result.text("kind"),
        endpoint=parse_endpoint(endpoint) if endpoint is not None else None,
        operation_families=tuple(
            OperationFamily(
                family=fam.text("family"),
                status=fam.text("status"),
                reason_codes=fam.opt_texts("reasonCodes"),
            )
            for fam in families
        ),
    )


class LifecycleApplied(msgspec.Struct, frozen=True, kw_only=True):
    """A lifecycle command's outcome: postures and guards before and after."""

    occurrence: str | None
    lifecycle_status: str | None
    replayed: bool
    scope: Scope
    kind: str
    endpoint_ref: UUID | None
    previous_posture: str | None
    current_posture: str | None
    previous_state_version: int | None
    current_state_version: int | None
    lifecycle_guard: LifecycleGuard | None
    reason: str | None


def parse_lifecycle(command: Fields, value: Fields) -> LifecycleApplied:
    """Read `body.command` and `body.endpoint.value` of a lifecycle answer."""
    result = value.obj("result")
    applied = result.opt_obj("applied")
    guard = applied.opt_obj("lifecycleGuard") if applied is not None else None
    return LifecycleApplied(
        occurrence=command.opt_text("occurrence"),
        lifecycle_status=command.opt_text("lifecycleStatus"),
        replayed=bool(command.opt_flag("replayed")),
        scope=parse_scope(value),
        kind=result.text("kind"),
        endpoint_ref=applied.opt_ref("endpointRef") if applied else None,
        previous_posture=applied.opt_text("previousPosture") if applied else None,
        current_posture=applied.opt_text("currentPosture") if applied else None,
        previous_state_version=applied.opt_integer("previousStateVersion") if applied else None,
        current_state_version=applied.opt_integer("currentStateVersion") if applied else None,
        lifecycle_guard=parse_guard(guard) if guard is not None else None,
        reason=applied.opt_text("reason") if applied else None,
    )
