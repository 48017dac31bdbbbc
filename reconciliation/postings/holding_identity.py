"""How people name a holding, and how the words a person types find one.

A holding has three names: recon's row id, the provider's holdingRef (a UUID every table keys
on) and the bank account its first locator gives it (account number and account name). People
know the last one, so every surface (report formats, console pages, alert subjects, CLI
tables) shows `HoldingIdentity.label`: `1179492814 SANDBOX 045D7D67`. The holdingRef stays
beside it where a machine or a person searching the provider needs it (JSON, CSV, a title
attribute, the holding's page). A holding whose locators recon has not read yet has no account
to show: its label is `ref bc43a97c`, the first digits of its holdingRef, the same fallback
everywhere (and `find_holdings` accepts it back).

Every door that takes a holding from a person (`--holding` of `recon report` and `recon audit`,
the API's `holding=`, the console's report form and holdings search) goes through
`find_holdings` / `resolve_holding`, so one text finds the same holding everywhere.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Select, and_, func, select
from sqlalchemy.orm import Session

from reconciliation.store.models import Holding, Locator

#: Hex digits of a holdingRef a label shows when the holding has no account yet: enough to
#: tell thousands of holdings apart (a clash in 8 hex digits is one in four billion a pair),
#: short enough for a table column.
SHORT_REF_DIGITS: Final = 8

#: Written before the short holdingRef of a holding without an account, so nobody reads it as
#: an account number.
REF_PREFIX: Final = "ref "

#: Candidates an ambiguous search names in its error; the rest are counted.
CANDIDATES_NAMED: Final = 10

#: Holdings a search returns at most (the console's pick list is one page of them).
SEARCH_LIMIT: Final = 200

_HEX: Final = re.compile(r"[0-9a-f]+")


class HoldingLookupError(ValueError):
    """No holding, or more than one, answers to what a person typed; the message says which."""


@dataclass(frozen=True, slots=True)
class HoldingIdentity:
    """One holding as people name it: its account when recon knows it, else its short ref."""

    ref: str
    account_number: str | None = None
    account_name: str | None = None
    #: recon's row id (None for a ref no stored holding has, such as a notification's account
    #: at another provider).
    holding_id: int | None = None
    currency: str | None = None

    @property
    def named(self) -> bool:
        """True when the holding has an account number or name to show."""
        return bool(self.account_number or self.account_name)

    @property
    def short_ref(self) -> str:
        return self.ref[:SHORT_REF_DIGITS] if _is_uuid(self.ref) else self.ref

    @property
    def label(self) -> str:
        """`1179492814 SANDBOX 045D7D67`, or `ref bc43a97c` before its account is known."""
        if self.named:
            return " ".join(part for part in (self.account_number, self.account_name) if part)
        return REF_PREFIX + self.short_ref if _is_uuid(self.ref) else self.ref

    @property
    def phrase(self) -> str:
        """`holding 1179492814 SANDBOX 045D7D67`: how an alert subject names the holding."""
        return f"holding {self.label}"

    def as_evidence(self) -> dict[str, Any]:
        """What an alert's evidence keeps of the name, so the subject is rebuilt from evidence
        alone and changes (with the evidence) when the account becomes known."""
        return {
            "holdingRef": self.ref,
            "accountNumber": self.account_number,
            "accountName": self.account_name,
        }


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _as_uuid(value: str | uuid.UUID) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _named_holdings() -> Select[int, uuid.UUID, str, str | None, str | None]:
    """Holdings with the account of their first locator (None when they have none yet)."""
    first = (
        select(Locator.holding_id, func.min(Locator.id).label("id"))
        .group_by(Locator.holding_id)
        .subquery()
    )
    return (
        select(
            Holding.id,
            Holding.holding_ref,
            Holding.currency,
            Locator.account_number,
            Locator.account_name,
        )
        .outerjoin(first, first.c.holding_id == Holding.id)
        .outerjoin(Locator, Locator.id == first.c.id)
    )


def _identity(row: Any) -> HoldingIdentity:
    return HoldingIdentity(
        ref=str(row.holding_ref),
        account_number=row.account_number,
        account_name=row.account_name,
        holding_id=int(row.id),
        currency=row.currency,
    )


def holding_identities(
    session: Session, refs: Iterable[str | uuid.UUID]
) -> dict[str, HoldingIdentity]:
    """Each ref's identity, keyed by the ref's text: one per ref given, a ref no holding has
    (or that is not a UUID) answered with its fallback rather than left out."""
    wanted = {str(ref): _as_uuid(ref) for ref in refs if ref is not None}
    keys = sorted({ref for ref in wanted.values() if ref is not None})
    found: dict[str, HoldingIdentity] = {}
    # Chunked: SQLite allows a few thousand bound parameters per statement.
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = _named_holdings().where(Holding.holding_ref.in_(chunk)).limit(len(chunk))
        for row in session.execute(query):
            found[str(row.holding_ref)] = _identity(row)
    return {
        text: found.get(str(ref)) or HoldingIdentity(ref=str(ref) if ref else text)
        for text, ref in wanted.items()
    }


def holding_identity(session: Session, ref: str | uuid.UUID) -> HoldingIdentity:
    """One ref's identity (its fallback when no holding has it)."""
    return holding_identities(session, [ref])[str(ref)]


def list_identities(session: Session, *, limit: int = SEARCH_LIMIT) -> list[HoldingIdentity]:
    """The first holdings by row id: the pick list of a form that names a holding."""
    query = _named_holdings().order_by(Holding.id).limit(limit)
    return [_identity(row) for row in session.execute(query)]


def find_holdings(session: Session, text: str, limit: int = SEARCH_LIMIT) -> list[HoldingIdentity]:
    """The holdings `text` names, best reading first; empty when none.

    Read in this order, the first that finds anything wins:
    1. a holdingRef (a UUID, any case, with or without hyphens): that holding;
    2. an account number exactly: the holdings it addresses;
    3. otherwise, together: the start of a holdingRef (at least SHORT_REF_DIGITS hex digits,
       as a label shows it, `ref ` before it allowed), and a case-insensitive part of
       "<account number> <account name>" (a name, a part of one, or a whole label pasted from
       a report).
    """
    wanted = text.strip()
    if not wanted:
        return []
    as_ref = wanted[len(REF_PREFIX) :].strip() if wanted.lower().startswith(REF_PREFIX) else None
    exact = _as_uuid(as_ref or wanted)
    base = _named_holdings()
    if exact is not None:
        query = base.where(Holding.holding_ref == exact).limit(1)
        return [_identity(row) for row in session.execute(query)]
    if as_ref is None:
        by_number = select(Locator.holding_id).where(Locator.account_number == wanted)
        query = base.where(Holding.id.in_(by_number)).order_by(Holding.id).limit(limit)
        numbered = [_identity(row) for row in session.execute(query)]
        if numbered:
            return numbered
    found: dict[int, HoldingIdentity] = {}
    prefix = (as_ref or wanted).lower().replace("-", "")
    if _HEX.fullmatch(prefix) and SHORT_REF_DIGITS <= len(prefix) < 32:
        low = uuid.UUID(prefix.ljust(32, "0"))
        high = uuid.UUID(prefix.ljust(32, "f"))
        query = base.where(and_(Holding.holding_ref >= low, Holding.holding_ref <= high))
        for row in session.execute(query.order_by(Holding.id).limit(limit)):
            found[int(row.id)] = _identity(row)
    if as_ref is None:
        label = func.lower(
            func.coalesce(Locator.account_number, "")
            + " "
            + func.coalesce(Locator.account_name, "")
        )
        by_label = select(Locator.holding_id).where(label.contains(wanted.lower(), autoescape=True))
        query = base.where(Holding.id.in_(by_label)).order_by(Holding.id).limit(limit)
        for row in session.execute(query):
            found.setdefault(int(row.id), _identity(row))
    return sorted(found.values(), key=lambda h: h.holding_id or 0)[:limit]


def resolve_holding(session: Session, text: str) -> HoldingIdentity:
    """The one holding `text` names (see `find_holdings`), or HoldingLookupError saying why
    not: nothing matched, or which holdings matched when more than one did."""
    shown = text.strip()[:80]
    if not shown:
        raise HoldingLookupError(
            "no holding named: give an account number, part of an account name, or a holdingRef"
        )
    found = find_holdings(session, text, limit=SEARCH_LIMIT + 1)
    if not found:
        raise HoldingLookupError(
            f"no holding matches {shown!r}: give an account number, part of an account name, "
            "or a holdingRef (`recon report` lists every holding by account)"
        )
    if len(found) == 1:
        return found[0]
    count = f"more than {SEARCH_LIMIT}" if len(found) > SEARCH_LIMIT else str(len(found))
    named = "; ".join(f"{h.label} (holdingRef {h.ref})" for h in found[:CANDIDATES_NAMED])
    first = f"the first {CANDIDATES_NAMED}: " if len(found) > CANDIDATES_NAMED else ""
    raise HoldingLookupError(
        f"{shown!r} matches {count} holdings ({first}{named}): give the account number or the "
        "holdingRef of the one you mean"
    )
