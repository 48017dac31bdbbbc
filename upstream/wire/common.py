"""Wire shapes shared by every gateway operation: value units, addresses, the success envelope.

Every gateway success looks like `{status, body, evidence}`; reads put `{value, freshness,
visibility, evidence}` in `body`, some writes put that same section under a named member
(`transfer`, `endpoint`, ...). `Result` carries the converted value together with its envelope
members and every receipt, so that nothing the provider proved is dropped on the floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar
from uuid import UUID

import msgspec

from foundation.money import unit_code
from upstream.wire.evidence import Evidence, merge_evidence
from upstream.wire.reader import Fields

T = TypeVar("T")


class ValueUnit(msgspec.Struct, frozen=True, kw_only=True):
    """What an amount is counted in. Only `fiat` (with `currency`) is shown by the spec.

    `asset`, `network` and `instrument_ref` identify other kinds (the spec names them as query
    parameters; their members in a `valueUnit` are not shown, so they are read under the same
    names). Its code (`str()`) is what the store keeps in `currency` columns.
    """

    kind: str
    currency: str | None = None
    asset: str | None = None
    network: str | None = None
    instrument_ref: str | None = None

    @classmethod
    def fiat(cls, currency: str) -> ValueUnit:
        """The common case: a fiat currency such as NGN."""
        return cls(kind="fiat", currency=currency)

    def to_wire(self) -> dict[str, object]:
        """The request form; absent members are omitted rather than sent as null."""
        out: dict[str, object] = {"kind": self.kind}
        if self.currency is not None:
            out["currency"] = self.currency
        if self.asset is not None:
            out["asset"] = self.asset
        if self.network is not None:
            out["network"] = self.network
        if self.instrument_ref is not None:
            out["instrumentRef"] = self.instrument_ref
        return out

    def __str__(self) -> str:
        """The unit's code, as recon stores and groups it: "NGN", "token:USDC@ethereum"."""
        return unit_code(self.kind, self.currency, self.asset, self.network, self.instrument_ref)


def parse_value_unit(f: Fields) -> ValueUnit:
    """Read a value unit object."""
    return ValueUnit(
        kind=f.text("kind"),
        currency=f.opt_text("currency"),
        asset=f.opt_text("asset"),
        network=f.opt_text("network"),
        instrument_ref=f.opt_text("instrumentRef"),
    )


class HoldingAddress(msgspec.Struct, frozen=True, kw_only=True):
    """The three refs that name one balance: account, endpoint, holding."""

    account_ref: UUID
    endpoint_ref: UUID
    holding_ref: UUID


class Destination(msgspec.Struct, frozen=True, kw_only=True):
    """Where a transfer goes. Only `internal-endpoint` is shown by the spec."""

    kind: str = "internal-endpoint"
    account_ref: UUID
    endpoint_ref: UUID
    holding_ref: UUID

    @classmethod
    def internal(cls, to: HoldingAddress) -> Destination:
        """An internal endpoint destination for a holding address."""
        return cls(
            account_ref=to.account_ref, endpoint_ref=to.endpoint_ref, holding_ref=to.holding_ref
        )

    def to_wire(self) -> dict[str, object]:
        """The request form."""
        return {
            "kind": self.kind,
            "accountRef": str(self.account_ref),
            "endpointRef": str(self.endpoint_ref),
            "holdingRef": str(self.holding_ref),
        }


def parse_destination(f: Fields) -> Destination:
    """Read a destination object."""
    return Destination(
        kind=f.text("kind"),
        account_ref=f.ref("accountRef"),
        endpoint_ref=f.ref("endpointRef"),
        holding_ref=f.ref("holdingRef"),
    )


def parse_evidence_list(f: Fields, name: str) -> tuple[Evidence, ...]:
    """Read `[{receiptRef, source?}]`; an absent list is an empty one."""
    if not f.has(name):
        return ()
    return tuple(
        Evidence(receipt_ref=item.ref("receiptRef"), source=item.opt_text("source"))
        for item in f.objs(name)
    )


class Result(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """A converted value with its envelope: HTTP status, freshness, visibility, receipts.

    `evidence` merges the wrapper's receipts with the section's (which also name a source).
    `idempotency_key` is set on the results of writes: the key the request went out under.
    """

    value: T
    http_status: int
    freshness: str | None = None
    visibility: str | None = None
    evidence: tuple[Evidence, ...] = ()
    idempotency_key: UUID | None = None


@dataclass(frozen=True, slots=True)
class Section:
    """One `{value, freshness, visibility, evidence}` section before its value is converted."""

    fields: Fields
    freshness: str | None
    visibility: str | None
    evidence: tuple[Evidence, ...]

    def result(self, value: T, http_status: int, outer: tuple[Evidence, ...]) -> Result[T]:
        """Attach the converted value, merging the wrapper's receipts with the section's."""
        return Result(
            value=value,
            http_status=http_status,
            freshness=self.freshness,
            visibility=self.visibility,
            evidence=merge_evidence(outer, self.evidence),
        )


@dataclass(frozen=True, slots=True)
class Envelope:
    """A decoded success wrapper: the body and the wrapper-level receipts."""

    http_status: int
    body: Fields
    evidence: tuple[Evidence, ...]

    def section(self, member: str | None = None) -> Section:
        """The `{value, ...}` section: the body itself, or the named member of it.

        A member without a `value` key is taken as the value itself, so a write that answers
        with a bare record (as `replay` may) still reads.
        """
        holder = self.body if member is None else self.body.obj(member)
        if member is not None and not holder.has("value"):
            return Section(fields=holder, freshness=None, visibility=None, evidence=())
        return Section(
            fields=holder.obj("value"),
            freshness=holder.opt_text("freshness"),
            visibility=holder.opt_text("visibility"),
            evidence=parse_evidence_list(holder, "evidence"),
        )

    def read(self, member: str | None = None) -> tuple[Fields, Section]:
        """Shorthand: the value's fields and the section to build the `Result` from."""
        section = self.section(member)
        return section.fields, section

    def all_evidence(self, *members: str) -> tuple[Evidence, ...]:
        """Every receipt in the wrapper and in the named sections that are present."""
        groups = [self.evidence]
        for member in members:
            if self.body.has(member):
                groups.append(self.section(member).evidence)
        return merge_evidence(*groups)


def parse_envelope(data: object, http_status: int) -> Envelope:
    """Read the gateway success wrapper `{status, body, evidence}`."""
    top = Fields(data, "response")
    return Envelope(
        http_status=http_status,
        body=top.obj("body"),
        evidence=parse_evidence_list(top, "evidence"),
    )
