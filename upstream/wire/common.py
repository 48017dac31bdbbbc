"""Wire shapes shared by every gateway operation: value units, addresses, the success envelope.

Every gateway success looks like `{status, body, evidence}`; reads put `{value, freshness,
visibility, evidence}` in `body`, some writes put that same section under a named member
(`transfer`, `endpoint`, ...). `Result` carries the converted value together with its envelope
members and every receipt, so that nothing the provider proved is dropped on the floor.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar
from uuid import UUID

import msgspec

from foundation import unit_code
from upstream.wire.decoding import decode
from upstream.wire.evidence import Evidence, merge_evidence

T = TypeVar("T")
U = TypeVar("U")


class ValueUnit(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
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
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    def __str__(self) -> str:
        """The unit's code, as recon stores and groups it: "NGN", "token:USDC@ethereum"."""
        return unit_code(self.kind, self.currency, self.asset, self.network, self.instrument_ref)


class HoldingAddress(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The three refs that name one balance: account, endpoint, holding."""

    account_ref: UUID
    endpoint_ref: UUID
    holding_ref: UUID


class Destination(HoldingAddress, frozen=True, kw_only=True):
    """Where a transfer goes. Only `internal-endpoint` is shown by the spec."""

    kind: str

    @classmethod
    def internal(cls, to: HoldingAddress) -> Destination:
        """An internal endpoint destination for a holding address."""
        return cls(
            kind="internal-endpoint",
            account_ref=to.account_ref,
            endpoint_ref=to.endpoint_ref,
            holding_ref=to.holding_ref,
        )

    def to_wire(self) -> dict[str, object]:
        """The request form."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


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

    def carrying(self, value: U) -> Result[U]:
        """The same envelope around another value (one the client built from this one's)."""
        return Result(
            value=value,
            http_status=self.http_status,
            freshness=self.freshness,
            visibility=self.visibility,
            evidence=self.evidence,
            idempotency_key=self.idempotency_key,
        )


class Section(msgspec.Struct, frozen=True, kw_only=True):
    """One `{value, freshness, visibility, evidence}` section before its value is converted."""

    value: dict[str, Any]
    freshness: str | None = None
    visibility: str | None = None
    evidence: tuple[Evidence, ...] = ()


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """The gateway success wrapper `{status, body, evidence}`: the body and the wrapper-level
    receipts. `http_status` is the HTTP answer's (the wrapper's own `status` is not read)."""

    body: dict[str, Any]
    evidence: tuple[Evidence, ...] = ()
    http_status: int = 0

    def section(self, member: str | None = None) -> tuple[Section, str]:
        """The `{value, ...}` section (the body itself, or the named member of it) and the path
        of its value.

        A member without a `value` key is taken as the value itself, so a write that answers
        with a bare record (as `replay` may) still reads.
        """
        where = "response.body" if member is None else f"response.body.{member}"
        holder = self.body if member is None else decode(self.body.get(member), dict, where)
        if member is not None and holder.get("value") is None:
            return Section(value=holder), where
        return decode(holder, Section, where), f"{where}.value"

    def read(self, kind: type[T], member: str | None = None, key: UUID | None = None) -> Result[T]:
        """The section's value read as `kind`, with the section's and the wrapper's receipts."""
        section, where = self.section(member)
        return Result(
            value=decode(section.value, kind, where),
            http_status=self.http_status,
            freshness=section.freshness,
            visibility=section.visibility,
            evidence=merge_evidence(self.evidence, section.evidence),
            idempotency_key=key,
        )

    def all_evidence(self, *members: str) -> tuple[Evidence, ...]:
        """Every receipt in the wrapper and in the named sections that are present."""
        groups = [self.evidence]
        for member in members:
            if self.body.get(member) is not None:
                groups.append(self.section(member)[0].evidence)
        return merge_evidence(*groups)


def parse_envelope(data: object, http_status: int) -> Envelope:
    """Read the gateway success wrapper `{status, body, evidence}`."""
    return msgspec.structs.replace(decode(data, Envelope, "response"), http_status=http_status)
