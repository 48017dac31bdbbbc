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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from reconciliation.alerts.lifecycle import RESOLVED, fingerprint, raise_alert, resolve_alert
from reconciliation.postings.holding_identity import holding_identities
from reconciliation.store.models import Alert, BalanceSnapshot, Holding
from reconciliation.store.write_statements import refusal
from upstream import BalanceSnapshot as WireSnapshot


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


@dataclass(slots=True)
class StoredSnapshot:
    """What one endpoint's answer became: the holdings stored, and those the store refused
    (holding ref -> why)."""

    stored: list[int] = field(default_factory=list)
    refused: dict[uuid.UUID, str] = field(default_factory=dict)


def store_snapshot(
    session: Session, target: EndpointToRead, snapshot: WireSnapshot, observed_at: datetime
) -> StoredSnapshot:
    """Insert one row per watched holding present in the answer.

    Holdings the answer does not mention get no row (a missing row is visible; a made-up zero
    would look like a real balance). A row the store refuses (an amount past what a column
    holds) is set aside with the reason, and the endpoint's other holdings are stored: one
    holding's balance never stops another's snapshots.
    """
    outcome = StoredSnapshot()
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
    refs = {holding_id: ref for ref, holding_id in target.holding_ids.items()}
    try:
        with session.begin_nested():
            if rows:
                session.execute(insert(BalanceSnapshot), rows)
        outcome.stored = [int(r["holding_id"]) for r in rows]
        return outcome
    except (SQLAlchemyError, ValueError):
        pass  # one of the rows is refused: store them one at a time, to find which
    for row in rows:
        try:
            with session.begin_nested():
                session.execute(insert(BalanceSnapshot), [row])
            outcome.stored.append(int(row["holding_id"]))
        except (SQLAlchemyError, ValueError) as exc:
            outcome.refused[refs[row["holding_id"]]] = refusal(exc)
    return outcome


#: Alert raised for a watched holding whose balance could not be snapshotted for a reason
#: waiting will not fix (an answer recon cannot read, a balance the store refuses).
SNAPSHOT_FAILED: Final = "balance_snapshot_failed"

#: Its severity: drift checks of that holding stop until it is fixed.
SNAPSHOT_FAILED_SEVERITY: Final = "high"

#: Who resolves the alert when the holding's snapshot is stored again.
SNAPSHOT_RESOLVER: Final = "snapshot_balances"


def note_snapshot_failures(session: Session, failed: dict[uuid.UUID, str], now: datetime) -> None:
    """Open (or refresh) one alert per holding whose snapshot failed, naming the reason."""
    names = holding_identities(session, failed)
    for holding_ref, reason in failed.items():
        holding = names[str(holding_ref)]
        raise_alert(
            session,
            kind=SNAPSHOT_FAILED,
            severity=SNAPSHOT_FAILED_SEVERITY,
            subject=f"balance snapshot of {holding.phrase} failed: {reason}",
            fingerprint=fingerprint(SNAPSHOT_FAILED, holding_ref),
            evidence={**holding.as_evidence(), "reason": reason},
            now=now,
        )


def clear_snapshot_failures(session: Session, holding_refs: Sequence[uuid.UUID]) -> None:
    """Resolve the failure alerts of holdings whose snapshot was stored again."""
    prints = [fingerprint(SNAPSHOT_FAILED, ref) for ref in holding_refs]
    if not prints:
        return
    for alert_id in session.scalars(
        select(Alert.id).where(Alert.fingerprint.in_(prints), Alert.state != RESOLVED)
    ):
        resolve_alert(session, alert_id, by=SNAPSHOT_RESOLVER, note="a snapshot was stored again")
