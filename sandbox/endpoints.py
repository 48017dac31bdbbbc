"""Programmable and receiving endpoints: the directory, their posture, and how they render.

An endpoint owns one holding (one value unit). Programmable endpoints are listed, read with a
lifecycle guard, suspended and resumed; a receiving endpoint is provisioned per owner and value
unit and is not programmable (reading it through the programmable route says so).
"""

from __future__ import annotations

import bisect
from typing import Any

from sandbox.ids import IdSource, fingerprint
from sandbox.units import unit_wire

INTERNAL = "customer_balance_internal"
COLLECTION_CHILD = "customer_balance_collection_child"
TEMPLATES = (INTERNAL, COLLECTION_CHILD)
RECEIVING = "receiving_endpoint"

ACTIVE = "active"
SUSPENDED = "suspended"
SUSPEND_REASONS = ("operator_hold", "provider_restriction", "compliance_hold")
RESUME_REASONS = ("operator_cleared",)

BANK_CODE = "000"
LOCATOR_FORM = "nigerian_bank_account"


class Locator:
    __slots__ = ("account_name", "account_number", "bank_code", "locator_ref")

    def __init__(self, locator_ref: str, account_number: str, account_name: str) -> None:
        self.locator_ref = locator_ref
        self.account_number = account_number
        self.account_name = account_name
        self.bank_code = BANK_CODE

    def render(self) -> dict[str, Any]:
        return {
            "locatorRef": self.locator_ref,
            "form": LOCATOR_FORM,
            "display": f"{self.bank_code}:{self.account_number}:{self.account_name}",
        }


class Endpoint:
    """One endpoint and the single holding it owns."""

    __slots__ = (
        "account_ref",
        "activation",
        "collection_ref",
        "currency",
        "endpoint_ref",
        "holding_ref",
        "locator",
        "owner_kind",
        "owner_ref",
        "parent_endpoint_ref",
        "posture",
        "state_version",
        "template",
    )

    def __init__(
        self,
        *,
        endpoint_ref: str,
        account_ref: str,
        holding_ref: str,
        owner_ref: str,
        owner_kind: str,
        template: str,
        currency: str,
    ) -> None:
        self.endpoint_ref = endpoint_ref
        self.account_ref = account_ref
        self.holding_ref = holding_ref
        self.owner_ref = owner_ref
        self.owner_kind = owner_kind
        self.template = template
        self.currency = currency
        self.collection_ref: str | None = None
        self.parent_endpoint_ref: str | None = None
        self.locator: Locator | None = None
        self.posture = ACTIVE
        self.state_version = 1
        # Receiving endpoints only: the activation record, as first returned.
        self.activation: dict[str, Any] | None = None

    @property
    def programmable(self) -> bool:
        return self.template in TEMPLATES

    @property
    def receives_external(self) -> bool:
        return self.template in (COLLECTION_CHILD, RECEIVING)

    @property
    def value_unit(self) -> dict[str, Any]:
        return unit_wire(self.currency)

    def guard(self) -> dict[str, Any]:
        """The lifecycle guard: a version plus a fingerprint of the state it was read in."""
        material = {"endpointRef": self.endpoint_ref, "v": self.state_version, "p": self.posture}
        return {
            "stateVersion": self.state_version,
            "fingerprint": fingerprint("endpoint-lifecycle-guard", material),
        }

    def posture_dims(self) -> dict[str, str]:
        external = self.receives_external
        return {
            "receive": "external_and_internal" if external else "internal_only",
            "send": "outbound_enabled",
            "lifecycle": "permanent",
            "drain": "no_drain",
            "backing": "collection_child"
            if self.template == COLLECTION_CHILD
            else "internal_ledger",
            "purpose": "customer_balance",
            "gas": "no_gas",
            "liquidity": "no_liquidity",
        }

    def render(self, *, with_guard: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "template": self.template,
            "accountRef": self.account_ref,
            "endpointRef": self.endpoint_ref,
            "holdingRef": self.holding_ref,
            "ownerRef": self.owner_ref,
            "ownerKind": self.owner_kind,
            "unit": self.value_unit,
            "ledgerPartition": "customer_liability",
            "ledgerNormalSide": "credit_normal",
            "capabilityPosture": self.posture_dims(),
        }
        if self.template == COLLECTION_CHILD:
            out["collectionRef"] = self.collection_ref
            out["parentEndpointRef"] = self.parent_endpoint_ref
        out["locators"] = [self.locator.render()] if self.locator else []
        if with_guard:
            out["lifecycleGuard"] = self.guard()
        return out

    def render_row(self) -> dict[str, Any]:
        summary: dict[str, Any]
        if self.locator is not None:
            summary = {"kind": "locator_forms", "count": 1, "forms": [LOCATOR_FORM]}
        else:
            summary = {"kind": "no_locator", "forms": []}
        return {
            "family": self.template,
            "accountRef": self.account_ref,
            "endpointRef": self.endpoint_ref,
            "ownerRef": self.owner_ref,
            "ownerKind": self.owner_kind,
            "unit": self.value_unit,
            "capabilityPosture": self.posture_dims(),
            "locatorSummary": summary,
        }

    def readiness(self) -> list[dict[str, Any]]:
        """Per operation family: ready, or blocked with the reason codes that explain it."""
        inactive = self.posture != ACTIVE

        def family(name: str, supported: bool) -> dict[str, Any]:
            if not supported:
                return {
                    "family": name,
                    "status": "blocked",
                    "reasonCodes": ["operation_not_supported"],
                }
            if inactive:
                return {"family": name, "status": "blocked", "reasonCodes": ["endpoint_inactive"]}
            return {"family": name, "status": "ready", "reasonCodes": ["ready"]}

        return [
            family("receive_funds", self.receives_external),
            family("send_funds", True),
            family("internal_transfer_destination", True),
            family("policy_drain", False),
        ]


class Directory:
    """Accounts and endpoints by reference, plus the sorted index the list pages walk."""

    def __init__(self, ids: IdSource) -> None:
        self._ids = ids
        self.endpoints: dict[str, Endpoint] = {}
        self.programmable_refs: list[str] = []  # sorted, for afterEndpointRef paging
        self.accounts_by_owner: dict[str, str] = {}
        self.collections: dict[tuple[str, str], tuple[str, str]] = {}
        self.receiving_current: dict[tuple[str, str, str], str] = {}
        self.account_numbers: dict[str, str] = {}  # account number -> endpointRef

    def account_for(self, owner_ref: str) -> str:
        """One account per owner; each of the owner's endpoints hangs off it."""
        if owner_ref not in self.accounts_by_owner:
            self.accounts_by_owner[owner_ref] = self._ids.new()
        return self.accounts_by_owner[owner_ref]

    def new_account_number(self) -> str:
        while True:
            number = self._ids.digits(10)
            if number not in self.account_numbers and number[0] != "0":
                return number

    def create(self, template: str, owner_ref: str, owner_kind: str, currency: str) -> Endpoint:
        ep = Endpoint(
            endpoint_ref=self._ids.new(),
            account_ref=self.account_for(owner_ref),
            holding_ref=self._ids.new(),
            owner_ref=owner_ref,
            owner_kind=owner_kind,
            template=template,
            currency=currency,
        )
        if template == COLLECTION_CHILD:
            key = (owner_ref, currency)
            if key not in self.collections:
                self.collections[key] = (self._ids.new(), self._ids.new())
            ep.collection_ref, ep.parent_endpoint_ref = self.collections[key]
        if template in (COLLECTION_CHILD, RECEIVING):
            number = self.new_account_number()
            name = f"SANDBOX {owner_ref[:8].upper()}"
            ep.locator = Locator(self._ids.new(), number, name)
            self.account_numbers[number] = ep.endpoint_ref
        self.endpoints[ep.endpoint_ref] = ep
        if ep.programmable:
            bisect.insort(self.programmable_refs, ep.endpoint_ref)
        return ep

    def is_collection_parent(self, ref: str) -> bool:
        return any(parent == ref for _, parent in self.collections.values())

    def page(self, size: int, after: str | None) -> list[Endpoint]:
        start = 0
        if after is not None:
            start = bisect.bisect_right(self.programmable_refs, after)
        return [self.endpoints[r] for r in self.programmable_refs[start : start + size]]
