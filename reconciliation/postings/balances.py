"""Balance snapshots: what the gateway said each watched holding's balance was, and when.

One balance read answers for every holding of an endpoint, so the snapshot pass reads once per
endpoint and stores a row per watched holding it finds in the answer. `observed_at` is the time
of the read, taken right after the answer arrived: comparing a snapshot with the postings
(the reconciler's job) needs to know how fresh the projection was, not when we wrote it down.
Amounts are int minor units as the upstream client converted them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from reconciliation.store.models import BalanceSnapshot, Holding
from upstream.wire.balances import BalanceSnapshot as WireSnapshot


@dataclass(frozen=True, slots=True)
class EndpointToRead:
    """One balance read to make: an endpoint and the watched holdings it should answer for."""

    account_ref: uuid.UUID
    endpoint_ref: uuid.UUID
    holding_ids: dict[uuid.UUID, int]


def endpoints_to_read(session: Session) -> list[EndpointToRead]:
    """Every endpoint with at least one watched holding, with those holdings' ids."""
    grouped: dict[tuple[uuid.UUID, uuid.UUID], dict[uuid.UUID, int]] = {}
    for holding_id, account_ref, endpoint_ref, holding_ref in session.execute(
        select(Holding.id, Holding.account_ref, Holding.endpoint_ref, Holding.holding_ref)
        .where(Holding.watched.is_(True))
        .order_by(Holding.endpoint_ref, Holding.id)
    ):
        grouped.setdefault((account_ref, endpoint_ref), {})[holding_ref] = holding_id
    return [
        EndpointToRead(account_ref=a, endpoint_ref=e, holding_ids=h)
        for (a, e), h in grouped.items()
    ]


def store_snapshot(
    session: Session, target: EndpointToRead, snapshot: WireSnapshot, observed_at: datetime
) -> list[int]:
    """Insert one row per watched holding present in the answer; returns their holding ids.

    Holdings the answer does not mention get no row (a missing row is visible; a made-up zero
    would look like a real balance).
    """
    rows: list[dict[str, Any]] = [
        {
            "holding_id": target.holding_ids[b.holding_ref],
            "settled_minor": b.settled_minor_units,
            "available_minor": b.available_minor_units,
            "reserved_minor": b.active_reserved_minor_units,
            "projection_state": b.projection_state or snapshot.projection_state,
            "observed_at": observed_at,
        }
        for b in snapshot.holding_balances
        if b.holding_ref in target.holding_ids
    ]
    if rows:
        session.execute(insert(BalanceSnapshot), rows)
    return [int(r["holding_id"]) for r in rows]


def latest_snapshots(session: Session, holding_ids: Sequence[int]) -> dict[int, BalanceSnapshot]:
    """The newest snapshot of each holding (for status pages and tests)."""
    latest: dict[int, BalanceSnapshot] = {}
    for snap in session.scalars(
        select(BalanceSnapshot)
        .where(BalanceSnapshot.holding_id.in_(list(holding_ids)))
        .order_by(BalanceSnapshot.observed_at, BalanceSnapshot.id)
    ):
        latest[snap.holding_id] = snap
    return latest
