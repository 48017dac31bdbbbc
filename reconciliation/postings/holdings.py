"""Holdings and their locators, as discovered from the gateway's endpoint register.

The register's list rows carry no holding ref and no locators (only a locator count), so each
endpoint is read once when it is new, and again only when its locator count no longer matches
what we stored: discovery stays one list pass plus one read per change, whatever the size.

A new holding is watched at once: it gets an activity cursor due now, so its postings are read
from the start. Locators keep the bank code, account number and name parsed from their display
form `<bank_code>:<account_number>:<account_name>` (docs/decisions.md), which is how a webhook's
account number is matched to a holding.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from reconciliation.postings.activity import ensure_cursor_rows
from reconciliation.store.models import Holding, Locator
from reconciliation.store.write_statements import insert_ignoring_conflicts
from upstream import Endpoint, EndpointRow
from upstream import Locator as WireLocator


@dataclass(frozen=True, slots=True)
class StoredHolding:
    """The holding an endpoint read was stored as, and whether it is new to us."""

    holding_id: int
    is_new: bool


def known_endpoints(session: Session) -> dict[uuid.UUID, int]:
    """Endpoint ref -> how many locators we store for it (0 for endpoints without any)."""
    counts: dict[uuid.UUID, int] = {}
    for endpoint_ref, count in session.execute(
        select(Holding.endpoint_ref, func.count(Locator.id))
        .outerjoin(Locator, Locator.holding_id == Holding.id)
        .group_by(Holding.endpoint_ref)
    ):
        counts[endpoint_ref] = int(count)
    return counts


def needs_read(row: EndpointRow, known: dict[uuid.UUID, int]) -> bool:
    """True when the row is an endpoint we have not stored, or its locators changed."""
    if row.endpoint_ref not in known:
        return True
    summary = row.locator_summary
    listed = 0
    if summary is not None and summary.kind != "no_locator":
        listed = summary.count or 0
    return listed != known[row.endpoint_ref]


def store_endpoint(session: Session, endpoint: Endpoint, now: datetime) -> StoredHolding | None:
    """Insert or refresh the endpoint's holding and locators; None if it names no holding."""
    if endpoint.holding_ref is None:
        return None
    unit = endpoint.unit
    values = {
        "account_ref": endpoint.account_ref,
        "endpoint_ref": endpoint.endpoint_ref,
        "owner_ref": endpoint.owner_ref,
        "unit_kind": unit.kind if unit is not None else "fiat",
        "currency": str(unit) if unit is not None else "",
        "template": endpoint.template,
        "ledger_partition": endpoint.ledger_partition,
        "updated_at": now,
    }
    inserted = session.scalar(
        insert_ignoring_conflicts(session, Holding, ["holding_ref"])
        .values(holding_ref=endpoint.holding_ref, watched=True, discovered_at=now, **values)
        .returning(Holding.id)
    )
    holding_id = inserted
    if holding_id is None:
        holding_id = session.scalar(
            update(Holding)
            .where(Holding.holding_ref == endpoint.holding_ref)
            .values(**values)
            .returning(Holding.id)
        )
    assert holding_id is not None
    for locator in endpoint.locators:
        _store_locator(session, holding_id, locator)
    is_new = inserted is not None
    if is_new:
        ensure_cursor_rows(session, [holding_id], now)
    return StoredHolding(holding_id=holding_id, is_new=is_new)


def holding_for_account_number(session: Session, account_number: str) -> int | None:
    """The holding a bank account number addresses, when exactly one does."""
    ids = list(
        session.scalars(
            select(Locator.holding_id).where(Locator.account_number == account_number).limit(2)
        )
    )
    return ids[0] if len(ids) == 1 else None


def _store_locator(session: Session, holding_id: int, locator: WireLocator) -> None:
    values = {
        "holding_id": holding_id,
        "form": locator.form,
        "display": locator.display,
        "bank_code": locator.bank_code,
        "account_number": locator.account_number,
        "account_name": _account_name(locator),
    }
    session.execute(
        insert_ignoring_conflicts(session, Locator, ["locator_ref"]).values(
            locator_ref=locator.locator_ref, **values
        )
    )
    session.execute(
        update(Locator).where(Locator.locator_ref == locator.locator_ref).values(**values)
    )


def _account_name(locator: WireLocator) -> str | None:
    parts = locator.display.split(":", 2)
    return parts[2] if locator.account_number is not None and len(parts) == 3 else None
